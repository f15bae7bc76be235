"""The fork as a run reads and moves it: `GitFork` pushes, `PlannedFork` (a dry run's) only plans.

A run gets one of them (`Session.fork`); the push step is the same for both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from backport.errors import BackportError
from backport.git.cache import push_branch, remote_sha


class GitFork:
    """The fork through git: ``ls-remote`` its branch, ``push --force-with-lease`` to it."""

    def head(self, url: str, branch: str, env: Mapping[str, str] | None) -> str | None:
        """The sha of ``branch`` on the fork, None when it is not there."""
        return remote_sha(url, branch, env=env)

    def push(self, repo: Path, url: str, sha: str, branch: str, *, expect: str | None,
             env: Mapping[str, str] | None, started: Callable[[], object]) -> bool:
        """Move ``branch`` to ``sha`` if it is still at ``expect`` (``started`` hears of it
        first, for the journal); True: it was pushed."""
        started()
        push_branch(repo, url, sha, branch, expect=expect, env=env)
        return True


class PlannedFork:
    """The fork of a dry run: read when it can be, never pushed to; each push a plan line."""

    def __init__(self, plan: Callable[[str], None]) -> None:
        self.plan = plan

    def head(self, url: str, branch: str, env: Mapping[str, str] | None) -> str | None:
        """As `GitFork.head`; a fork it cannot read (not named until the token is set, no
        credentials yet) is said in the plan and taken as not having the branch, so the
        push and the PR the real run would make are planned."""
        if not url:
            self.plan(f"fork branch '{branch}' not read: the fork follows the token's login, "
                      "and this dry run has no token; the plan takes it as not there yet")
            return None
        try:
            return remote_sha(url, branch, env=env)
        except BackportError as exc:
            self.plan(f"{exc.message.rstrip('.')}; the plan takes it as not there yet")
            return None

    def push(self, repo: Path, url: str, sha: str, branch: str, *, expect: str | None,
             env: Mapping[str, str] | None, started: Callable[[], object]) -> bool:
        """One plan line; False: nothing was pushed."""
        self.plan(f"git push --force-with-lease={branch}:{expect or ''} <fork> "
                  f"{sha[:9]}:refs/heads/{branch}")
        return False


Fork = GitFork | PlannedFork
