"""The explicit per-branch workflow states and which of them are final."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Where one target branch stands. Progress states first, then outcomes."""

    PENDING = "pending"  # nothing done yet
    APPLIED = "applied"  # fork branch committed in its worktree
    TESTED = "tested"  # tests passed (or were skipped on request)
    PUSHED = "pushed"  # fork branch on the fork
    DONE = "done"  # PR open, body current, issue linked
    PLANNED = "planned"  # --dry-run / --no-push / --no-pr stopped here on purpose
    ALREADY_APPLIED = "already-applied"  # same patch-id already upstream; no PR
    ALREADY_PRESENT = "already-present"  # every test the patch adds is there already; no PR
    ALREADY_PROPOSED = "already-proposed"  # another PR into the target carries the source PR
    CONFLICT = "conflict"  # git am -3 stopped; worktree kept for the user
    TEST_FAILED = "test-failed"
    ENV_MISSING = "env-missing"  # interpreter not there
    ENV_MISMATCH = "env-mismatch"  # pins differ; tests not run
    ENV_UNAVAILABLE = "env-unavailable"  # device: npu without a visible NPU
    FORK_DIVERGED = "fork-diverged"  # someone else moved the fork branch
    FAILED = "failed"  # any other error (network, forge, git)

    @property
    def ok(self) -> bool:
        """Success for the exit code (already-proposed too, though a re-run looks again)."""
        return self in (Status.DONE, Status.ALREADY_APPLIED, Status.ALREADY_PRESENT,
                        Status.ALREADY_PROPOSED, Status.PLANNED)

    @property
    def final(self) -> bool:
        """True when a plain re-run has nothing left to do for this branch."""
        return self in (Status.DONE, Status.ALREADY_APPLIED, Status.ALREADY_PRESENT)


# Statuses that stop the branch before push; the run exits 1 when any branch ends in one.
FAILURES = frozenset({Status.CONFLICT, Status.TEST_FAILED, Status.ENV_MISSING, Status.ENV_MISMATCH,
                      Status.ENV_UNAVAILABLE, Status.FORK_DIVERGED, Status.FAILED})


# Where an apply (or the look-up before it) can end, from any state.
_APPLY_ENDS = frozenset({Status.PENDING, Status.APPLIED, Status.ALREADY_APPLIED,
                         Status.ALREADY_PRESENT, Status.ALREADY_PROPOSED, Status.CONFLICT,
                         Status.FAILED, Status.FORK_DIVERGED})
# Where a test can end: only on a branch with a commit (not pending, not in a conflict).
_TEST_ENDS = frozenset({Status.TESTED, Status.TEST_FAILED, Status.ENV_MISSING,
                        Status.ENV_MISMATCH, Status.ENV_UNAVAILABLE})
_PUSHABLE = frozenset({Status.TESTED, Status.PUSHED, Status.TEST_FAILED, Status.PLANNED})
# The one table of allowed moves: each state a record may go to from each state (staying
# in the same state is always allowed). `pipeline/journal.py` checks every change against it.
MOVES: dict[Status, frozenset[Status]] = {
    here: _APPLY_ENDS
    | (_TEST_ENDS if here not in (Status.PENDING, Status.CONFLICT) else frozenset())
    | (frozenset({Status.PUSHED, Status.PLANNED}) if here in _PUSHABLE else frozenset())
    | (frozenset({Status.DONE}) if here == Status.PUSHED else frozenset())
    | {here}
    for here in Status
}


def may_move(here: Status, there: Status) -> bool:
    """True when a branch record may go from ``here`` to ``there`` (see ``MOVES``)."""
    return there in MOVES[here]
