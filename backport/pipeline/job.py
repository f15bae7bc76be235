"""One (patch set, target branch) pair of a run, and how it reports progress."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from backport.config.model import PatchSet
from backport.pipeline.journal import Journal, Transition
from backport.records import BranchRecord

Event = Callable[[str, str], None]  # (step, detail)


class ProgressSink(Protocol):
    """Where a run's progress goes: one event per (row, step, detail)."""

    def event(self, target: str, step: str, detail: str = "") -> None: ...


@dataclass
class BranchJob:
    """One (patch set, target branch) pair of a run: its record lives in ``journal``."""

    patch_set: PatchSet
    target: str
    fork_branch: str
    journal: Journal
    event: Event

    @property
    def record(self) -> BranchRecord:
        rec = self.journal.get(self.target)
        assert rec is not None
        return rec

    def change(self, transition: Transition) -> BranchRecord:
        """Apply one named transition to this branch's record (persisted)."""
        return self.journal.change(self.target, transition)

    def stop(self, transition: Transition) -> None:
        """Apply a transition that stops the branch, and report its status and message."""
        rec = self.change(transition)
        self.event(rec.status.value, rec.message)
