"""The worktree a branch record keeps (a conflict to resolve, a commit to test or look at)."""

from __future__ import annotations

from pathlib import Path

from backport.git.worktree import Worktree
from backport.records import BranchRecord


def kept_worktree(rec: BranchRecord | None) -> Worktree | None:
    """The record's worktree, opened, while it is still on disk; None when it keeps none."""
    if rec is None or not rec.worktree:
        return None
    path = Path(rec.worktree)
    return Worktree.open(path) if path.exists() else None
