"""One human resolution, every branch: the siblings' series a conflicted branch may try.

When a branch's own series conflicts, the series a maintainer made for a neighbour — a conflict
resolved by hand (`backport continue`) or a saved variant (``patches/NAME/B/``) — is often what
the older branch needs too. So is a neighbour's result that itself went in from such a series
(the chain: master's resolution applied on v2.12.0 is what v2.11.0 tries first). They are tried
nearest release first; never where the own series applies cleanly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from backport.branch_order import nearest_first
from backport.config.model import PatchSet
from backport.config.patchfiles import Patch, read_patch
from backport.errors import BackportError
from backport.git.apply import ApplyResult, abort_series, apply_series
from backport.git.apply_fallbacks import apply_ignoring_context, finish_by_entries
from backport.git.patch_export import export_patch_set
from backport.git.worktree import Worktree
from backport.pipeline.journal import Journal
from backport.records import BranchRecord, SeriesSource
from backport.states import Status

_NO_RESULT = (Status.PENDING, Status.CONFLICT)


@dataclass(frozen=True)
class SiblingSeries:
    """A series made for another target branch."""

    branch: str
    kind: str  # "resolution", "variant" or "propagated" (see SeriesSource)
    patches: tuple[Patch, ...]
    via: SeriesSource | None = None  # "propagated": the series that sibling took

    @property
    def source(self) -> SeriesSource:
        """What the journal records of it."""
        return SeriesSource(self.branch, self.kind, self.via)

    @property
    def label(self) -> str:
        """``the v2.11.0 resolution`` / ``… variant`` / ``the v2.11.0 result, itself from …``."""
        return self.source.label


def _safe(name: str) -> str:
    return name.replace("/", "_")


def _exported(repo: Path, out: Path, rec: BranchRecord) -> list[Patch]:
    """The record's commit (on its base) as patch files in ``out``, each read once as it is
    written; [] if unreadable."""
    try:
        return [read_patch(file) for file in
                export_patch_set(repo, f"{rec.base}..{rec.commit}", out, force=True)]
    except BackportError:
        return []


def _result_kind(rec: BranchRecord | None) -> str | None:
    """The kind of a record's commit when a maintainer's series made it (else None)."""
    if rec is None or not rec.commit or not rec.base or rec.status in _NO_RESULT:
        return None
    if rec.manual:
        return "resolution"
    if rec.series_source is not None:
        return "propagated"
    return None


def recorded_series(repo: Path, journal: Journal, branch: str, out: Path
                    ) -> SiblingSeries | None:
    """``branch``'s result as the journal records it, when a maintainer's series made it: its
    hand resolution, or what went in from another branch's series; exported under ``out``."""
    rec = journal.get(branch)
    kind = _result_kind(rec)
    if kind is None or rec is None:
        return None
    files = _exported(repo, out, rec)
    if not files:
        return None
    return SiblingSeries(branch, kind, tuple(files),
                         rec.series_source if kind == "propagated" else None)


def _passes(series: SiblingSeries, target: str) -> bool:
    """True when ``series`` was carried to its branch from (or through) ``target``."""
    step = series.via
    while step is not None:
        if step.branch == target:
            return True
        step = step.via
    return False


def sibling_series(repo: Path, patch_set: PatchSet, journal: Journal, target: str, *,
                   out: Path | None = None) -> list[SiblingSeries]:
    """The other targets' series for ``target`` to try, nearest release first.

    Per sibling: its hand resolution, or its result that went in from another sibling's
    series (exported from ``repo``, the cache holding the commit, under ``out``, by default the
    run directory), then its saved variant when it has one. Never a result carried from
    ``target`` itself, and never a sibling's own tool-made result: only what a maintainer made,
    and where it went, is carried.
    """
    found = []
    for branch in nearest_first(target, patch_set.branches):
        folder = (out or journal.run_dir / "resolutions") / _safe(target) / _safe(branch)
        recorded = recorded_series(repo, journal, branch, folder)
        if recorded is not None and not _passes(recorded, target):
            found.append(recorded)
            if recorded.kind == "resolution":
                continue  # a hand resolution replaces the variant it may have started from
        if branch in patch_set.variants:
            found.append(SiblingSeries(branch, "variant", patch_set.variants[branch]))
    return found


def try_siblings(wt: Worktree, candidates: Sequence[SiblingSeries], own_series: Sequence[Patch],
                 own: ApplyResult, event: Callable[[str], None] = lambda detail: None
                 ) -> tuple[ApplyResult, SiblingSeries | None, list[str]]:
    """The own series conflicted in ``wt``: try ``candidates`` in order, each as `git am -3`
    (where that stops only on JSON lists of one member per line, merged entry by entry);
    when none applies so, each again with its context lines ignored where every change has
    one certain place (both `git/apply_fallbacks.py`) — a maintainer's series often fails only
    on a line next to its change that differs here.

    Returns the result to record, the series that applied (or None) and the labels of those
    that did not. When none applies, the own series is applied again and its conflict left in
    ``wt`` for the user.
    """
    tried: list[str] = []
    for loose in (False, True):
        for candidate in candidates:
            abort_series(wt)
            if loose:
                attempt = apply_ignoring_context(wt, candidate.patches)
            else:
                attempt = finish_by_entries(wt, apply_series(wt, candidate.patches))
            if attempt.status == "applied":
                how = " with its context lines ignored" if attempt.loose else ""
                event(f"applied from {candidate.label}{how}")
                return attempt, candidate, tried
            if attempt.status == "conflict":
                abort_series(wt)
            if loose:
                tried.append(candidate.label)
                event(f"{candidate.label} still conflicts")
    if not candidates:
        return own, None, tried
    abort_series(wt)
    return apply_series(wt, own_series), None, tried
