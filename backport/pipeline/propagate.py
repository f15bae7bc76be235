"""One human resolution, every branch: the siblings' series a conflicted branch may try.

When a branch's own series conflicts, the series a maintainer made for a neighbour — a conflict
resolved by hand (`backport continue`) or a saved variant (``patches/NAME/B/``) — is often what
the older branch needs too. So is a neighbour's result that itself went in from such a series
(the chain: master's resolution applied on v2.12.0 is what v2.11.0 tries first). They are tried
nearest release first; never where the own series applies cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backport.branch_order import nearest_first
from backport.config.model import PatchSet
from backport.errors import BackportError
from backport.git.authoring import export_patch_set
from backport.pipeline.journal import Journal
from backport.records import BranchRecord, SeriesSource
from backport.states import Status

_NO_RESULT = (Status.PENDING, Status.CONFLICT)


@dataclass(frozen=True)
class SiblingSeries:
    """A series made for another target branch."""

    branch: str
    kind: str  # "resolution", "variant" or "propagated" (see SeriesSource)
    patches: tuple[Path, ...]
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


def _exported(repo: Path, journal: Journal, target: str, rec: BranchRecord) -> list[Path]:
    """The sibling's commit (on its base) as patch files in the run directory; [] if unreadable."""
    out = journal.run_dir / "resolutions" / _safe(target) / _safe(rec.target)
    try:
        return export_patch_set(repo, f"{rec.base}..{rec.commit}", out, force=True)
    except BackportError:
        return []


def _result_kind(rec: BranchRecord | None) -> str | None:
    """"resolution" / "propagated" when the sibling holds a commit a maintainer's series made."""
    if rec is None or not rec.commit or not rec.base or rec.status in _NO_RESULT:
        return None
    if rec.manual:
        return "resolution"
    if rec.series_source is not None:
        return "propagated"
    return None


def sibling_series(repo: Path, patch_set: PatchSet, journal: Journal,
                   target: str) -> list[SiblingSeries]:
    """The other targets' series for ``target`` to try, nearest release first.

    Per sibling: its hand resolution, or its result that went in from another sibling's
    series (exported from ``repo``, the cache holding the commit, into the run directory),
    then its saved variant when it has one. The branch's own tool-made results never: only
    what a maintainer made, and what it made elsewhere, is carried.
    """
    found = []
    for branch in nearest_first(target, patch_set.branches):
        rec = journal.get(branch)
        kind = _result_kind(rec)
        if kind is not None and rec is not None:
            files = _exported(repo, journal, target, rec)
            if files:
                via = rec.series_source if kind == "propagated" else None
                found.append(SiblingSeries(branch, kind, tuple(files), via))
                if kind == "resolution":
                    continue  # a hand resolution replaces the variant it may have started from
        if branch in patch_set.variants:
            found.append(SiblingSeries(branch, "variant", patch_set.variants[branch]))
    return found
