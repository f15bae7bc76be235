"""One human resolution, every branch: the siblings' series a conflicted branch may try.

When a branch's own series conflicts, the series a maintainer made for a neighbour — a conflict
resolved by hand (`backport continue`) or a saved variant (``patches/NAME/B/``) — is often what
the older branch needs too. They are tried nearest release first; never where the own series
applies cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backport.branch_order import nearest_first
from backport.config.model import PatchSet
from backport.errors import BackportError
from backport.git.authoring import export_patch_set
from backport.pipeline.journal import Journal
from backport.records import SeriesSource


@dataclass(frozen=True)
class SiblingSeries:
    """A series made for another target branch."""

    branch: str
    kind: str  # "resolution" (resolved by hand in this run's journal) or "variant" (saved)
    patches: tuple[Path, ...]

    @property
    def source(self) -> SeriesSource:
        """What the journal records of it."""
        return SeriesSource(self.branch, self.kind)

    @property
    def label(self) -> str:
        """``the v2.11.0 resolution`` / ``the v2.11.0 variant``."""
        return self.source.label


def _safe(name: str) -> str:
    return name.replace("/", "_")


def sibling_series(repo: Path, patch_set: PatchSet, journal: Journal,
                   target: str) -> list[SiblingSeries]:
    """The other targets' series for ``target`` to try, nearest release first.

    A hand resolution recorded in the journal is exported from ``repo`` (the cache holding its
    commit) into the run directory; a sibling with a saved variant offers that variant.
    """
    found = []
    for branch in nearest_first(target, patch_set.branches):
        rec = journal.get(branch)
        if rec is not None and rec.manual and rec.commit and rec.base:
            out = journal.run_dir / "resolutions" / _safe(target) / _safe(branch)
            try:
                files = export_patch_set(repo, f"{rec.base}..{rec.commit}", out, force=True)
            except BackportError:
                files = []
            if files:
                found.append(SiblingSeries(branch, "resolution", tuple(files)))
                continue
        if branch in patch_set.variants:
            found.append(SiblingSeries(branch, "variant", patch_set.variants[branch]))
    return found
