"""Build real git repositories for tests (plain functions, no fixtures).

Every call is an argv list run with ``LANG=C`` and an explicit identity, so the helpers work on
a machine without any git configuration::

    up = make_bare_upstream(tmp_path, {"master": {}, "v2.7.1": {"a.py": "x\\n"}},
                            base={"a.py": "base\\n"})
    work = clone(up, tmp_path / "work", branch="master")
    sha = commit_file(work, "a.py", "new\\n", "test: change a")
    [patch] = format_patch(work, "HEAD~1..HEAD", tmp_path / "patches")
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

AUTHOR = ("Ada Author", "ada@example.com")
COMMITTER = ("Cy Committer", "cy@example.com")
DEFAULT_DATE = "2024-05-06T07:08:09+00:00"


T = TypeVar("T")
R = TypeVar("R")


def git_env(
    author: tuple[str, str] = AUTHOR, date: str | None = DEFAULT_DATE
) -> dict[str, str]:
    """os.environ plus C locale, no prompts, a fixed author/committer identity and no auto
    maintenance after a commit (a process each; nothing here is about git's housekeeping)."""
    env = dict(os.environ)
    count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    env.update({
        "LANG": "C", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1],
        "GIT_COMMITTER_NAME": COMMITTER[0], "GIT_COMMITTER_EMAIL": COMMITTER[1],
        "GIT_CONFIG_COUNT": str(count + 1), f"GIT_CONFIG_KEY_{count}": "maintenance.auto",
        f"GIT_CONFIG_VALUE_{count}": "false",
    })
    if date:
        env["GIT_AUTHOR_DATE"] = date
        env["GIT_COMMITTER_DATE"] = date
    return env


def git(repo: Path | str, *args: str, env: Mapping[str, str] | None = None,
        input: bytes | None = None, check: bool = True) -> str:
    """Run ``git -C repo args...``; return stdout (stripped). Raises on failure when ``check``."""
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], input=input, capture_output=True,
        env=dict(env) if env is not None else git_env(), check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed ({proc.returncode}):\n"
            f"{proc.stdout.decode(errors='replace')}{proc.stderr.decode(errors='replace')}"
        )
    return proc.stdout.decode("utf-8", "replace").strip()


def make_repo(path: Path, *, branch: str = "master") -> Path:
    """Create an empty non-bare repository at ``path`` whose unborn branch is ``branch``."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", f"--initial-branch={branch}")
    return path


def make_bare(path: Path) -> Path:
    """Create an empty bare repository (e.g. a fork) and return its path."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--bare")
    return path


def write_files(repo: Path, files: Mapping[str, str | None]) -> None:
    """Write (or, for ``None``, delete) files in the work tree and stage them."""
    for rel, content in files.items():
        target = Path(repo) / rel
        if content is None:
            git(repo, "rm", "--quiet", "-f", "--", rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        git(repo, "add", "--", rel)


def commit_files(
    repo: Path, files: Mapping[str, str | None], message: str, *,
    author: tuple[str, str] = AUTHOR, date: str | None = DEFAULT_DATE,
    allow_empty: bool = False,
) -> str:
    """Write ``files`` and commit them; return the new commit's sha."""
    write_files(repo, files)
    args = ["commit", "--quiet", "--no-verify", "-m", message]
    if allow_empty:
        args.append("--allow-empty")
    git(repo, *args, env=git_env(author, date))
    return git(repo, "rev-parse", "HEAD")


def commit_file(
    repo: Path, path: str, content: str, message: str, *,
    author: tuple[str, str] = AUTHOR, date: str | None = DEFAULT_DATE,
) -> str:
    """Write one file and commit it; return the commit sha."""
    return commit_files(repo, {path: content}, message, author=author, date=date)


def clone(source: Path | str, path: Path, *, branch: str | None = None) -> Path:
    """A normal (non-bare) clone of ``source`` at ``path``."""
    args = ["clone", "--quiet"]
    if branch:
        args += ["--branch", branch]
    git(Path(path).parent, *args, "--", str(source), str(path))
    return Path(path)


def format_patch(repo: Path, rev_range: str, out_dir: Path, *, full_index: bool = True) -> list[Path]:
    """``git format-patch`` ``rev_range`` into ``out_dir``; return the patch files in order."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    args = ["format-patch", "--quiet", "-o", str(out_dir)]
    if full_index:
        args.append("--full-index")
    git(repo, *args, rev_range)
    return sorted(out_dir.glob("*.patch"))


def make_bare_upstream(
    tmp: Path,
    branches: Mapping[str, Mapping[str, str | None]],
    *,
    base: Mapping[str, str | None] | None = None,
    name: str = "upstream.git",
    allow_filter: bool = True,
) -> Path:
    """A bare upstream at ``tmp/name`` with one branch per ``branches`` entry; return its path.

    History: a root commit with ``base`` (or a README), then per branch one commit on top of
    the root writing that branch's files (``None`` deletes; an empty mapping leaves the branch
    at the root). ``allow_filter`` lets partial clones filter blobs (``uploadpack.allowFilter``).
    The work repository used to build it stays at ``tmp/<name>.work``.
    """
    tmp = Path(tmp)
    work = make_repo(tmp / f"{name}.work", branch="root")
    commit_files(work, base or {"README.md": "upstream\n"}, "initial import")
    root = git(work, "rev-parse", "HEAD")
    for branch, files in branches.items():
        git(work, "checkout", "--quiet", "-B", branch, root)
        if files:
            commit_files(work, files, f"{branch}: branch state")
    bare = make_bare(tmp / name)
    git(work, "push", "--quiet", str(bare), *(f"refs/heads/{b}:refs/heads/{b}" for b in branches))
    if allow_filter:
        git(bare, "config", "uploadpack.allowFilter", "true")
        git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    first = next(iter(branches), None)
    if first:
        git(bare, "symbolic-ref", "HEAD", f"refs/heads/{first}")
    return bare


def git_ok(repo: Path | str, *args: str) -> bool:
    """True when ``git -C repo args...`` exits 0."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                          env=git_env(), check=False)
    return proc.returncode == 0


def has_object(repo: Path, sha: str) -> bool:
    """True when the object is stored locally (never triggers a lazy fetch)."""
    out = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return sha in out.splitlines()


def count_objects(repo: Path, kind: str = "blob") -> int:
    """How many objects of ``kind`` the repository holds locally (promisor-missing ones excluded)."""
    out = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objecttype)")
    return sum(1 for line in out.splitlines() if line == kind)


def branches_of(repo: Path, prefix: str = "refs/heads/") -> dict[str, str]:
    """ref name (without ``prefix``) -> sha for every ref under ``prefix``."""
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    heads = {}
    for line in out.splitlines():
        ref, sha = line.split()
        heads[ref[len(prefix):]] = sha
    return heads


def run_in_threads(work: Callable[[T], R], items: Iterable[T]) -> tuple[dict[T, R], list[Exception]]:
    """Run ``work`` on every item, each in its own thread at once: results by item, and errors."""
    results: dict[T, R] = {}
    errors: list[Exception] = []

    def run(item: T) -> None:
        try:
            results[item] = work(item)
        except Exception as exc:  # noqa: BLE001 - collected for the test to assert on
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors
