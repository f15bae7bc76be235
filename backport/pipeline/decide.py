"""What applying a series to a base gives: the one decision `apply` and `check` share.

The order is the rule: already applied upstream (same patch-id) → every test the series adds
already on the base (`already-present`, final) → `git am -3` of the own series → where that
conflicts, the recorded and sibling series (`try_siblings`) → a changed test file that shadows
a name or does not compile. One human resolution serves every branch: where a branch's own
series conflicts, a sibling's hand resolution, saved variant (``patches/NAME/B/``) or result
carried from such a series is tried, nearest release first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from backport.config.model import PatchSet, nearest_first
from backport.config.patchfiles import Patch, read_patch
from backport.errors import BackportError
from backport.git.apply import ApplyResult, abort_series, already_applied, apply_series
from backport.git.cache import RepoCache
from backport.git.python_tests import (
    AddedTest,
    added_tests,
    all_present,
    changed_python_tests,
    present_tests,
    source_problems,
)
from backport.git.worktree import Worktree
from backport.pipeline.journal import Journal
from backport.records import ExistingTest, SeriesSource
from backport.states import Status


class Verdict(Enum):
    """How the series goes in on the base."""

    ALREADY_APPLIED = "already-applied"  # the same patch-id is reachable from the base
    ALREADY_PRESENT = "already-present"  # the base defines every test the series adds
    NO_CHANGE = "no-change"  # `git am` finds nothing to change
    CONFLICT = "conflict"  # neither the own series nor any other offered goes in
    UNUSABLE = "unusable"  # it goes in, but a test file shadows a name or does not compile
    APPLIED = "applied"


@dataclass(frozen=True)
class SiblingSeries:
    """A series made for another target branch."""

    branch: str
    kind: str  # "resolution", "variant" or "propagated" (see SeriesSource)
    patches: tuple[Patch, ...]
    via: SeriesSource | None = None  # "propagated": the series that sibling took

    @property
    def source(self) -> SeriesSource:
        return SeriesSource(self.branch, self.kind, self.via)


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
    def present_said(self) -> str:  # the tests already present, as one phrase
        return "; ".join(t.describe() for t in self.present)


def decide(cache: RepoCache, base: str, series: Sequence[Patch], test_paths: Sequence[str], *,
           worktree: Callable[[], Worktree], others: Callable[[], Sequence[SiblingSeries]],
           event: Callable[[str], None] = lambda detail: None) -> Decision:
    """What applying ``series`` to ``base`` gives; ``worktree`` and ``others`` called if needed."""
    if already_applied(cache, base, series):
        return Decision(Verdict.ALREADY_APPLIED)
    blobs = cache.memo.reader(cache.path)
    added = tuple(added_tests(cache.path, series, blobs))
    present = tuple(ExistingTest(path=p.test.path, name=p.test.qualname, line=p.line,
                                 commit=p.commit, subject=p.subject)
                    for p in (present_tests(cache.path, base, list(added), blobs) if added else ()))
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


def recorded_series(repo: Path, journal: Journal, branch: str, out: Path
                    ) -> SiblingSeries | None:
    """``branch``'s recorded result when a maintainer's series made it, exported under ``out``."""
    rec = journal.get(branch)
    if (rec is None or not rec.commit or not rec.base
            or rec.status in (Status.PENDING, Status.CONFLICT)
            or (not rec.manual and rec.series_source is None)):
        return None
    from backport.git.patch_export import export_patch_set  # only where a result is carried

    try:
        files = [read_patch(file) for file in
                 export_patch_set(repo, f"{rec.base}..{rec.commit}", out, force=True)]
    except BackportError:
        return None
    kind, via = ("resolution", None) if rec.manual else ("propagated", rec.series_source)
    return SiblingSeries(branch, kind, tuple(files), via) if files else None


def sibling_series(repo: Path, patch_set: PatchSet, journal: Journal, target: str, *,
                   out: Path) -> list[SiblingSeries]:
    """Each sibling's recorded series (not one carried from ``target``), then its variant."""
    found = []
    for branch in nearest_first(target, patch_set.branches):
        folder = out / target.replace("/", "_") / branch.replace("/", "_")
        recorded = recorded_series(repo, journal, branch, folder)
        via, passes = recorded.via if recorded else None, False
        while via is not None and not passes:  # carried from (or through) ``target`` itself
            passes, via = via.branch == target, via.via
        if recorded is not None and not passes:
            found.append(recorded)
            if recorded.kind == "resolution":
                continue  # a hand resolution replaces the variant it may have started from
        if branch in patch_set.variants:
            found.append(SiblingSeries(branch, "variant", patch_set.variants[branch]))
    return found


def try_siblings(wt: Worktree, candidates: Sequence[SiblingSeries], own_series: Sequence[Patch],
                 own: ApplyResult, event: Callable[[str], None] = lambda detail: None
                 ) -> tuple[ApplyResult, SiblingSeries | None, list[str]]:
    """Try ``candidates`` with `git am -3`, then with context ignored; else the own conflict."""
    from backport.git.apply_fallbacks import apply_ignoring_context, finish_by_entries  # rare

    tried: list[str] = []
    for loose in (False, True):
        for candidate in candidates:
            abort_series(wt)
            if loose:
                attempt = apply_ignoring_context(wt, candidate.patches)
            else:
                attempt = finish_by_entries(wt, apply_series(wt, candidate.patches))
            if attempt.status == "applied":
                how = " with its context lines ignored" if attempt.context_ignored else ""
                event(f"applied from {candidate.source.label}{how}")
                return attempt, candidate, tried
            if attempt.status == "conflict":
                abort_series(wt)
            if loose:
                tried.append(candidate.source.label)
                event(f"{candidate.source.label} still conflicts")
    if not candidates:
        return own, None, tried
    abort_series(wt)
    return apply_series(wt, own_series), None, tried
