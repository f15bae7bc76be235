"""The stand-in GitCode server reads a fork's branches from git's ref files as git does."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.gitcode import git_branch_checker
from tests.helpers.gitrepos import commit_file, git, make_bare, make_repo


def test_loose_packed_nested_and_absent_branches_read_as_git_reads_them(tmp_path: Path) -> None:
    work = make_repo(tmp_path / "work")
    first = commit_file(work, "a.txt", "a\n", "first")
    second = commit_file(work, "a.txt", "b\n", "second")
    fork = make_bare(tmp_path / "fork.git")
    git(work, "push", "--quiet", str(fork), f"{first}:refs/heads/packed",
        f"{first}:refs/heads/team/x")
    git(fork, "pack-refs", "--all")
    git(work, "push", "--quiet", str(fork), f"{second}:refs/heads/loose")
    git(fork, "symbolic-ref", "refs/heads/alias", "refs/heads/loose")
    exists = git_branch_checker({"lgxxx/pytorch": fork})
    for branch in ("packed", "team/x", "loose", "alias", "team", "gone", "team/x/y"):
        asked = git(fork, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}",
                    check=False) or None
        assert exists("lgxxx/pytorch", branch) == asked, branch
    assert exists("lgxxx/pytorch", "packed") == first and exists("lgxxx/pytorch", "alias") == second
    assert exists("someone/else", "packed") is None
