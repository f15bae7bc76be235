"""`backport new`: make a patch set from commits."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import click
import yaml

from backport.commands.common import AppContext, echo, pass_app
from backport.config import load_patch_set
from backport.config.patch_set import patch_set_name_problem
from backport.config.validate import display_path
from backport.envs.device import infer_device
from backport.envs.model import AUTOLOAD
from backport.errors import BackportError, ConfigError
from backport.git.authoring import (
    export_patch_set,
    file_at,
    first_subject,
    test_files,
    touched_files,
)


def _ask(value: str | None, prompt: str, option: str) -> str:
    """``value``, else the answer at a terminal prompt; off a terminal the option is required."""
    if value:
        return value
    if not sys.stdin.isatty():
        raise BackportError("usage", f"{option} is required off a terminal")
    try:
        return click.prompt(prompt)
    except click.exceptions.Abort as exc:  # click turns both EOF and Ctrl-C into Abort
        if isinstance(exc.__context__, EOFError):
            raise BackportError("usage", f"input ended at the {option} prompt, so no patch set "
                                f"was written; pass {option}") from None
        raise


def _commit_problem(exc: BackportError, repo_given: bool) -> BackportError:
    """Where the commits were looked for by default (the current folder), say so and how to
    name another repository."""
    if repo_given:
        return exc
    if " is not a git repository" in exc.message:
        here = exc.message.replace(" is not a git repository", " (the current folder) is not a "
                                   "git repository", 1)
        return BackportError(exc.code, f"{here}; pass --repo PATH naming the clone that holds "
                             f"the commits")
    if "is not a commit in the repository" not in exc.message:
        return exc
    return BackportError(exc.code, f"{exc.message} (the current folder); pass --repo PATH "
                         f"naming the clone that holds it")


def _required_off_terminal(**given: object) -> None:
    """Off a terminal nothing can be asked: name every missing option at once."""
    missing = [f"--{name}" for name, value in given.items() if not value]
    if missing and not sys.stdin.isatty():
        verb = "is" if len(missing) == 1 else "are"
        raise BackportError("usage", f"{' and '.join(missing)} {verb} required off a terminal")


@click.command("new")
@click.argument("name")
@click.option("--from", "rev", required=True, metavar="REV[..REV]",
              help="One commit, or a range A..B, to export with git format-patch.")
@click.option("--repo", "repo", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Repository holding the commits.")
@click.option("--api", "api", default=None, metavar="FULL.NAME",
              help="The API the tests cover (asked for at a terminal; required off a terminal).")
@click.option("--issue", "issue", type=click.IntRange(min=1), default=None,
              help="Upstream issue every PR links to (asked for at a terminal; required off a "
                   "terminal).")
@click.option("--title", "title", default=None, help="PR title (default: first commit's subject).")
@click.option("--force", is_flag=True, help="Replace an existing patch set of that name.")
@pass_app
def new_cmd(app: AppContext, name: str, rev: str, repo: Path, api: str | None, issue: int | None,
            title: str | None, force: bool) -> None:
    """Create patches/NAME/ from commits: numbered patches plus a patch.yaml.

    The tests are the test files the commits touch; the title is the first commit's subject;
    `device: npu` is inferred when a test imports torch_npu or creates npu tensors or devices
    (else `device: none`), and said.

    \b
    Example:
      backport new put_metric --from 7519b4613 --repo ~/src/pytorch \\
        --api torch.distributed.elastic.metrics.put_metric --issue 3216
    """
    problem = patch_set_name_problem(name)
    if problem:
        raise BackportError("usage", problem)
    project = app.project()
    patches_dir = app.patches or project.root / "patches"
    dest = patches_dir / name
    if dest.exists() and not force:
        raise BackportError("usage", f"patch set {dest} already exists; pass --force to replace it")
    _required_off_terminal(api=api, issue=issue)
    repo_given = click.get_current_context().get_parameter_source("repo") is not (
        click.core.ParameterSource.DEFAULT)
    try:
        tests = test_files(touched_files(repo, rev))
    except BackportError as exc:
        raise _commit_problem(exc, repo_given) from None
    if not tests:
        raise BackportError("usage", f"the commits {rev} touch no test file; a patch set needs one")
    api = _ask(api, "API (e.g. torch.distributed.elastic.metrics.put_metric)", "--api")
    issue_no = int(_ask(str(issue) if issue else None, "Upstream issue number", "--issue"))
    sources = {path: text for path in tests if (text := file_at(repo, rev, path)) is not None}
    device, reasons = infer_device(sources)
    spec = {
        "api": api, "issue": issue_no, "title": title or first_subject(repo, rev),
        "tests": [{"path": path, "args": ["-v"]} for path in tests], "device": device,
    }
    patches_dir.mkdir(parents=True, exist_ok=True)
    staging_root = Path(tempfile.mkdtemp(prefix=".new-", dir=patches_dir))
    staging = staging_root / name
    try:
        export_patch_set(repo, rev, staging, force=True)
        (staging / "patch.yaml").write_text(
            yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
        try:
            load_patch_set(staging, project.branch_map)
        except ConfigError as exc:
            message = exc.message.replace(str(staging), str(dest))
            raise ConfigError(message.replace(display_path(staging), display_path(dest))) from exc
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)
    files = sorted(p.name for p in dest.glob("*.patch"))
    echo(f"wrote {dest}: {', '.join(files)} and patch.yaml (tests: {', '.join(tests)})")
    if device == "npu":
        echo(f"device: npu, inferred because {'; '.join(reasons)}: the tests run only where "
             f"torch_npu loads and an NPU is visible (edit patch.yaml if they do not need one)")
    else:
        echo("device: none, inferred because no test imports torch_npu or creates npu tensors: "
             f"the tests run with {AUTOLOAD}=0 where torch_npu cannot load")
    echo(f"next: backport check --api {name}")
