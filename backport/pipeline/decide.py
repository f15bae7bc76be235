"""What applying a patch set's series to a base gives: the one decision `apply` and `check` share.

The order is the rule: already applied upstream (same patch-id) → every test the series adds
already there → `git am -3` of the branch's own series → where that conflicts, the recorded and
sibling series (`propagate.try_siblings`) → a test file the result shadows or cannot compile.
The callers differ only in where the worktree lives and which other series they offer; what they
do with the answer (journal transitions, check findings) is theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from backport.config.patchfiles import Patch
from backport.git.apply import ApplyResult, already_applied, apply_series
from backport.git.cache import RepoCache
from backport.git.python_tests import (
    AddedTest,
    PresentTest,
    added_tests,
    all_present,
    changed_python_tests,
    present_tests,
    source_problems,
)
from backport.git.worktree import Worktree
from backport.pipeline.propagate import SiblingSeries, try_siblings
from backport.records import ExistingTest


class Verdict(Enum):
    """How the series goes in on the base."""

    ALREADY_APPLIED = "already-applied"  # the same patch-id is reachable from the base
    ALREADY_PRESENT = "already-present"  # the base defines every test the series adds
    NO_CHANGE = "no-change"  # `git am` finds nothing to change
    CONFLICT = "conflict"  # neither the own series nor any other offered goes in
    UNUSABLE = "unusable"  # it goes in, but a test file shadows a name or does not compile
    APPLIED = "applied"


@dataclass(frozen=True)
class Decision:
    """The answer, with the facts each caller reports."""

    verdict: Verdict
    added: tuple[AddedTest, ...] = ()
    present: tuple[ExistingTest, ...] = ()  # of ``added``, those the base already defines
    result: ApplyResult | None = None  # None when nothing was applied
    worktree: Worktree | None = None  # the caller's, holding ``result``; the caller removes it
    source: SiblingSeries | None = None  # the other series that went in instead of the own
    tried: tuple[str, ...] = ()  # the other series that did not
    problems: tuple[str, ...] = ()  # UNUSABLE: each test file problem

    @property
    def said(self) -> str:
        """The tests already present, as one phrase."""
        return "; ".join(t.describe() for t in self.present)


def existing_tests(found: list[PresentTest]) -> tuple[ExistingTest, ...]:
    """The journal's form of the tests a target already defines."""
    return tuple(ExistingTest(path=p.test.path, name=p.test.qualname, line=p.line,
                              commit=p.commit, subject=p.subject) for p in found)


def decide(cache: RepoCache, base: str, series: Sequence[Patch], test_paths: Sequence[str], *,
           worktree: Callable[[], Worktree], others: Callable[[], Sequence[SiblingSeries]],
           event: Callable[[str], None] = lambda detail: None) -> Decision:
    """What applying ``series`` to ``base`` gives.

    ``worktree`` makes the worktree to apply in, on ``base`` (only called when something is
    to be applied); ``others`` gives the series to try where the own one conflicts (only
    called then). The files it reads go through the run's memo (``cache.memo``).
    """
    if already_applied(cache, base, series):
        return Decision(Verdict.ALREADY_APPLIED)
    blobs = cache.memo.reader(cache.path)
    added = tuple(added_tests(cache.path, series, blobs))
    present = existing_tests(present_tests(cache.path, base, list(added), blobs)) if added else ()
    if all_present(added, present):
        return Decision(Verdict.ALREADY_PRESENT, added, present)
    wt = worktree()
    result = apply_series(wt, series, base=base)
    source: SiblingSeries | None = None
    tried: list[str] = []
    if result.status == "conflict":
        result, source, tried = try_siblings(wt, others(), series, result, event)
    found = Decision(Verdict.APPLIED, added, present, result, wt, source, tuple(tried))
    if result.status == "already-applied":
        return replace(found, verdict=Verdict.NO_CHANGE)
    if result.status == "conflict":
        return replace(found, verdict=Verdict.CONFLICT)
    problems = source_problems(wt.path, base, result.head,
                               changed_python_tests(series, list(test_paths)), blobs)
    if problems:
        return replace(found, verdict=Verdict.UNUSABLE, problems=tuple(problems))
    return found
