"""The demo's sandbox (`build_sandbox`): a local upstream with four release branches, an empty
fork, a project; the put_metric set, a Python with torch, the merged PR of `demo --from-pr`."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from backport import process
from backport.bundled import DEMO_PATCH_SET
from backport.config import load_project
from backport.config.branch_map import cache_root
from backport.config.patch_set import load_patch_set
from backport.errors import BackportError
from backport.forge import PrFile
from backport.forge.local import LocalForge
from backport.git.cache import file_lock
from backport.git.run import git
from backport.pipeline.from_pr import sets_from_prs
from backport.pipeline.session import ApplyOptions, Session
from backport.records import SKIP_NO_TORCH

TARGETS = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
TEST_PATH = "test/distributed/elastic/metrics/test_metrics_api.py"
MARKER = ".backport-demo"  # the file that makes a folder a demo sandbox, replaceable
_ENV_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_VERSIONS = ("import importlib.metadata as m, sys\n"
             "try: print('torch-' + m.version('torch'))\n"
             "except m.PackageNotFoundError: print('python-%d.%d' % sys.version_info[:2])")


@dataclass(frozen=True)
class Sandbox:
    root: Path
    upstream: Path
    fork: Path
    project: Path

    @property
    def config(self) -> Path:
        return self.project / "branches.yaml"

    @property
    def cache(self) -> Path:
        return self.root / "cache"


# One author, committer and date for every demo commit: the sandbox is reproducible.
_IDENTITY = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER") for what, value in (
    ("NAME", "backport demo"), ("EMAIL", "demo@backport.invalid"),
    ("DATE", "2026-08-01T09:00:00+08:00"))}


def _git(cwd: Path, *args: str) -> None:
    git(args, cwd=cwd, env=_IDENTITY)


def _commit(work: Path, message: str) -> None:
    _git(work, "add", "--all", "--", ".")
    _git(work, "commit", "--quiet", "-m", message)


def build_upstream(path: Path) -> Path:
    """A bare repository standing in for Ascend/pytorch, with the four target branches."""
    work_dir = path.parent / (path.name + ".work")
    work_dir.mkdir(parents=True)
    _git(work_dir, "init", "--quiet", "--initial-branch=master")
    test_file = work_dir / TEST_PATH
    test_file.parent.mkdir(parents=True)
    test_file.write_bytes(
        resources.files("backport.demo").joinpath("files/test_metrics_api.py.txt").read_bytes())
    (work_dir / "README.md").write_text(
        "# demo upstream\n\nA stand-in for Ascend/pytorch made by `backport demo`.\n",
        encoding="utf-8")
    (work_dir / "version.txt").write_text("unreleased\n", encoding="utf-8")
    _commit(work_dir, "demo: the metrics test file as the release branches share it")
    for target in TARGETS[:-1]:  # master is there
        _git(work_dir, "branch", "--force", target, "HEAD")
    for target in TARGETS:
        _git(work_dir, "checkout", "--quiet", target)
        version = target.lstrip("v") if target != "master" else "2.13.0.dev"
        (work_dir / "version.txt").write_text(version + "\n", encoding="utf-8")
        _commit(work_dir, f"demo: version {version}")
    _git(path.parent, "clone", "--quiet", "--bare", "--", str(work_dir), str(path))
    _git(path, "config", "uploadpack.allowFilter", "true")
    _git(path, "config", "receive.autogc", "false")  # as a forge: no gc after each push
    shutil.rmtree(work_dir)
    return path


SOURCE_HEAD = "test-put-metric-master"  # the merged demo PR's source branch


def land_merged_pr(sandbox: Sandbox, number: int, patches: Path, base: str = "master") -> str:
    """Squash-merge ``patches`` onto ``base`` as GitCode lands PR ``number``; the commit's sha."""
    work = sandbox.root / "merge.work"
    _git(sandbox.root, "clone", "--quiet", "--branch", base, "--", str(sandbox.upstream),
         str(work))
    try:
        _git(work, "am", "--quiet", *(str(p) for p in sorted(patches.glob("[0-9]*.patch"))))
        first = git(["rev-list", "--reverse", f"origin/{base}..HEAD"], cwd=work).stdout.split()[0]
        subject, author, date = git(["log", "-1", "--format=%s%n%an <%ae>%n%aI", first],
                                    cwd=work).stdout.splitlines()
        _git(work, "reset", "--soft", f"origin/{base}")
        merging = {k: v for k, v in _IDENTITY.items() if k != "GIT_COMMITTER_DATE"}
        message = (f"{subject}\n\n# message auto-generated for no-merge-commit merge:\n"  # GitCode's
                   f"!{number} merge {SOURCE_HEAD} into {base}\n\n{subject}\n\n"
                   f"Merged-by: ascend-robot\n\nSee merge request: Ascend/pytorch!{number}\n")
        git(["commit", "--quiet", f"--author={author}", f"--date={date}", "-m", message],
            cwd=work, env=merging)
        _git(work, "push", "--quiet", "origin", f"HEAD:refs/heads/{base}")
        return git(["rev-parse", "HEAD"], cwd=work).stdout.strip()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_project(project: Path, upstream: Path, fork: Path, patches: Path,
                  python: str | None) -> None:
    """branches.yaml for the sandbox plus a copy of the put_metric patch set."""
    project.mkdir(parents=True, exist_ok=True)
    interpreter = python or "python3"
    name = environment_name(interpreter)
    config = {
        "forge": "local",
        "upstream": "Ascend/pytorch",
        "fork": "lgxxx/pytorch",
        "fork_branch": "test-{slug}-{target}",
        "upstream_url": str(upstream),
        "fork_url": str(fork),
        "environments": {name: {"python": interpreter,
                                "env": {"PYTHONDONTWRITEBYTECODE": "1"}}},
        "branches": {t: {"env": name} for t in TARGETS},
    }
    header = ("# backport demo sandbox: a local upstream and fork, and the embedded local forge.\n"
              "# All four branches share one environment here, named for what it holds; the\n"
              "# project's own branches.yaml gives each release branch its own torch.\n")
    (project / "branches.yaml").write_text(
        header + yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    shutil.copytree(patches, project / "patches" / patches.name, dirs_exist_ok=True)


def environment_name(python: str) -> str:
    """The demo environment's name: ``torch-<version>`` of ``python``, else ``python-X.Y``."""
    try:
        done = process.run([python, "-c", _VERSIONS], timeout=60)
    except BackportError:  # it cannot start
        return "python"
    name = done.out.strip().splitlines()[-1] if done.out.strip() else ""
    return name if done.ok and _ENV_NAME.fullmatch(name) else "python"


def build_sandbox(root: Path, patches: Path, python: str | None) -> Sandbox:
    """The sandbox under an empty ``root``, marked first: a half-built one is replaced too."""
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise FileExistsError(root)
    (root / MARKER).write_text("a backport demo sandbox; the next `backport demo` here "
                               "replaces this folder\n", encoding="utf-8")
    upstream = build_upstream(root / "upstream.git")
    fork = root / "fork.git"
    _git(root, "init", "--quiet", "--bare", "--", str(fork))
    # A forge's fork borrows the upstream's objects; relative, so a copy borrows from its own.
    (fork / "objects" / "info" / "alternates").write_text(
        "../../upstream.git/objects\n", encoding="utf-8")
    _git(fork, "config", "receive.autogc", "false")  # as a forge: no gc after each push
    project = root / "project"
    write_project(project, upstream, fork, patches, python)
    return Sandbox(root=root, upstream=upstream, fork=fork, project=project)


def find_patch_set(patches: Path | None) -> Path:
    """``patches``/put_metric when given, else the put_metric the package ships."""
    candidate = patches / "put_metric" if patches is not None else DEMO_PATCH_SET
    if (candidate / "patch.yaml").is_file():
        return candidate.resolve()
    raise BackportError("usage", f"the put_metric patch set was not found in {candidate} "
                        "(--patches names the folder that holds put_metric/)")


def has_torch(python: str) -> bool:
    """``python`` exists and has torch installed (read without importing it)."""
    return Path(python).exists() and environment_name(python).startswith("torch-")


def find_torch_python(explicit: str | None) -> str | None:
    """An interpreter with torch for the demo's tests, or None; ``--python`` must have torch."""
    if explicit and not has_torch(explicit):
        raise BackportError("usage", f"--python {explicit} has no torch installed")
    checkout = Path(__file__).resolve().parents[2]  # installed in place from a source checkout
    candidates = [explicit] if explicit else [
        os.environ.get("BACKPORT_DEMO_PYTHON"),
        str(checkout / ".ci" / "venvs" / "torch-2.13.0" / "bin" / "python"), sys.executable]
    return next((c for c in candidates if c and has_torch(c)), None)


def set_from_merged_pr(session: Session, sandbox: Sandbox, patches: Path,
                       say: Callable[[str], None]) -> str:
    """Land put_metric on master as a merged PR and make its patch set from it; its name."""
    spec = load_patch_set(patches, session.project.branch_map)
    forge = session.forge.real()
    assert isinstance(forge, LocalForge)
    files = tuple(PrFile(d.old, d.new) for patch in spec.patches for d in patch.files)
    number = forge.add_source_pr(head=SOURCE_HEAD, base="master", title=spec.title,
                                 body=f"{spec.title}\n\nAPI={spec.api}\n", author="lgxxx",
                                 issues=spec.issues, files=files)
    sha = land_merged_pr(sandbox, number, patches)
    say(f"the sandbox's upstream holds PR !{number} ({spec.title}), squash-merged into master "
        f"as {sha[:12]}")
    shutil.rmtree(sandbox.project / "patches" / patches.name)
    (name,), _, _ = sets_from_prs(session, sandbox.project / "patches", (number,), say, say)
    return name


@contextmanager
def demo_session(directory: Path | None, patches: Path, torch_python: str | None, *,
                 from_pr: bool, say: Callable[[str], None],
                 ) -> Iterator[tuple[Session, Sandbox, bool, str]]:
    """The sandbox, its session, whether it replaced a previous demo's, and the set to apply."""
    root = Path(os.path.abspath(directory or cache_root(os.environ) / "demo"))
    lock = nullcontext() if directory else file_lock(root.parent / ".demo.lock", wait=False)
    with lock:
        replaced = root.exists() and (not root.is_dir() or any(root.iterdir()))
        if replaced and (root.is_symlink() or not (root / MARKER).is_file()):
            raise BackportError("usage", f"{root} holds files that are not a demo sandbox; move "
                                "them away or pass --dir with an empty folder")
        if replaced:  # a previous demo's sandbox
            shutil.rmtree(root)
        sandbox = build_sandbox(root, patches, torch_python)
        session = Session(load_project(sandbox.config, None, os.environ),
                          ApplyOptions(skip_tests=torch_python is None, skip_cause=SKIP_NO_TORCH),
                          environ={**os.environ, "BACKPORT_CACHE": str(sandbox.cache)})
        name = set_from_merged_pr(session, sandbox, patches, say) if from_pr else "put_metric"
        yield session, sandbox, replaced, name
