"""How far a run goes (`Effects`), whether it only plans (`--dry-run`: a dry forge, a planning
`Fork`, no journal), and what it needs first (a dry run names what it lacks at its end).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from backport.errors import BackportError
from backport.git.cache import push_branch, remote_sha


class Effects(Enum):
    """Where a run's effects stop."""

    LOCAL = "local"  # apply and test on this machine; nothing leaves it (--no-push)
    PUSH = "push"  # and push each fork branch (--no-pr)
    PR = "pr"  # and open or refresh each branch's PR (the default)


class Prerequisite(Enum):
    """Something a run's effects need before it starts."""

    ENVIRONMENTS = "environments"  # the test environments, built on this machine
    TOKEN = "token"  # the forge's credentials
    FORK = "fork"  # the fork's name (set, or the token's login)


@dataclass(frozen=True)
class RunMode:
    """How far one run goes and whether its effects are only planned."""

    effects: Effects = Effects.PR
    dry_run: bool = False

    @classmethod
    def of_flags(cls, *, dry_run: bool = False, no_push: bool = False,
                 no_pr: bool = False) -> RunMode:
        """``--no-push`` wins over ``--no-pr``; ``--dry-run`` keeps how far the run goes."""
        effects = Effects.LOCAL if no_push else Effects.PUSH if no_pr else Effects.PR
        return cls(effects, dry_run)

    @property
    def pushes(self) -> bool:  # (or, dry, plans the push of) each tested branch
        return self.effects is not Effects.LOCAL

    @property
    def opens_prs(self) -> bool:  # opens or refreshes (or, dry, plans) each branch's PR
        return self.effects is Effects.PR

    def prerequisites(self, *, skip_tests: bool) -> tuple[Prerequisite, ...]:
        """Environments unless tests are skipped; token and fork once anything leaves here."""
        tests = () if skip_tests else (Prerequisite.ENVIRONMENTS,)
        return (*tests, Prerequisite.TOKEN, Prerequisite.FORK) if self.pushes else tests


class Fork:
    """The fork through git; a dry run's (``plan``) is only read, each push a plan line."""

    def __init__(self, plan: Callable[[str], None] | None = None) -> None:
        self.plan = plan

    def head(self, url: str, branch: str, env: Mapping[str, str] | None) -> str | None:
        if self.plan is not None and not url:
            self.plan(f"fork branch '{branch}' not read: the fork follows the token's login, "
                      "and this dry run has no token; the plan takes it as not there yet")
            return None
        try:
            return remote_sha(url, branch, env=env)
        except BackportError as exc:
            if self.plan is None:
                raise
            self.plan(f"{exc.message.rstrip('.')}; the plan takes it as not there yet")
            return None

    def push(self, repo: Path, url: str, sha: str, branch: str, *, expect: str | None,
             env: Mapping[str, str] | None, started: Callable[[], object]) -> bool:
        """Move ``branch`` to ``sha`` if it is still at ``expect``; False: only planned."""
        if self.plan is not None:
            self.plan(f"git push --force-with-lease={branch}:{expect or ''} <fork> "
                      f"{sha[:9]}:refs/heads/{branch}")
            return False
        started()
        push_branch(repo, url, sha, branch, expect=expect, env=env)
        return True
