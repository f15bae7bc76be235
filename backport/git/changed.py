"""The files a commit changes against its base, and their content at that commit."""

from __future__ import annotations

from pathlib import Path

from backport.git.run import git


def changed_paths(cwd: Path, base: str, commit: str) -> dict[str, bool]:
    """Every path ``base..commit`` changes -> whether ``commit`` still has it (False: deleted).
    A rename is its old path (deleted) and its new one."""
    out = git(["diff", "--name-status", "--no-renames", "-z", base, commit, "--"], cwd=cwd)
    items = [item for item in out.stdout.split("\0") if item]
    return {path: status != "D" for status, path in zip(items[::2], items[1::2], strict=True)}


def file_at(cwd: Path, commit: str, path: str) -> bytes:
    """The bytes of ``path`` in ``commit``."""
    return git(["cat-file", "blob", f"{commit}:{path}"], cwd=cwd).raw
