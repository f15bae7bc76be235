"""How far a run goes, decided once from `apply`'s flags, and what it needs to start.

`--no-push` and `--no-pr` set the reach (local, push, pr); `--dry-run` keeps the reach and
makes its effects plans: the run's forge is a dry one and its push a dry one
(`Session`), and it writes no journal. The prerequisites follow the reach through one
function, `Course.needs`: a real run refuses to start without them, a dry run names them at
its end as what the real run needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Reach(Enum):
    """Where a run's effects stop."""

    LOCAL = "local"  # apply and test on this machine; nothing leaves it (--no-push)
    PUSH = "push"  # and push each fork branch (--no-pr)
    PR = "pr"  # and open or refresh each branch's PR (the default)


class Need(Enum):
    """Something a run's effects need before it starts."""

    ENVIRONMENTS = "environments"  # the test environments, built on this machine
    TOKEN = "token"  # the forge's credentials
    FORK = "fork"  # the fork's name (set, or the token's login)


@dataclass(frozen=True)
class Course:
    """The reach of one run and whether its effects are only planned."""

    reach: Reach = Reach.PR
    dry_run: bool = False  # effects planned, not made: a dry forge, a dry push, no journal

    @classmethod
    def of_flags(cls, *, dry_run: bool = False, no_push: bool = False,
                 no_pr: bool = False) -> Course:
        """The one decision: ``--no-push`` wins over ``--no-pr``; ``--dry-run`` keeps the reach."""
        reach = Reach.LOCAL if no_push else Reach.PUSH if no_pr else Reach.PR
        return cls(reach, dry_run)

    @property
    def pushes(self) -> bool:
        """The run pushes (or, dry, plans the push of) each tested branch."""
        return self.reach is not Reach.LOCAL

    @property
    def opens_prs(self) -> bool:
        """The run opens or refreshes (or, dry, plans) each branch's PR."""
        return self.reach is Reach.PR

    def needs(self, *, skip_tests: bool) -> tuple[Need, ...]:
        """What the effects of this reach need, dry or not: environments unless the tests are
        skipped; the forge's token and the fork once anything leaves this machine."""
        tests = () if skip_tests else (Need.ENVIRONMENTS,)
        return (*tests, Need.TOKEN, Need.FORK) if self.pushes else tests
