"""The audit's values and their one JSON form (the contract in docs/audit.md)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

LANDED, PROPOSED, MISSING, NOT_NEEDED, IGNORED = (
    "landed", "proposed", "missing", "not-needed", "ignored")
BRANCH_MISSING = "branch-missing"  # the target branch is not upstream (or not in the cache)
STATES = (LANDED, PROPOSED, MISSING, NOT_NEEDED, IGNORED, BRANCH_MISSING)

# How a landed change was found (said in the terminal and the page's title text, not the JSON).
BY_ANCESTRY, BY_PATCH_ID, BY_CARRIER, BY_TITLE, BY_TESTS = (
    "same commit", "same patch-id", "names the change", "same title and files",
    "tests already there")


@dataclass(frozen=True)
class Cell:
    """A change's state on one target: the commit that carries it (landed), the open PR
    (proposed), whether it applies to the target's head now (missing)."""

    state: str
    commit: str = ""
    pr: int | None = None
    applies: bool | None = None
    why: str = ""

    def applying(self, applies: bool | None, why: str = "") -> Cell:
        """This missing cell, saying whether the change applies to the target's head (None:
        not known, ``why``: a blob it needs could not be read)."""
        return Cell(self.state, self.commit, self.pr, applies, why or self.why)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state}
        if self.commit:
            out["commit"] = self.commit
        if self.pr is not None:
            out["pr"] = self.pr
        if self.applies is not None or self.state == MISSING:
            out["applies"] = self.applies
        if self.state == MISSING and self.applies is None and self.why:
            out["why"] = self.why
        return out


@dataclass(frozen=True)
class Change:
    """One change merged on ``branch`` (a first-parent commit; a squash merge is one change,
    known by its ``!N``)."""

    branch: str
    commit: str
    pr: int | None
    title: str
    date: str  # committer date, ISO 8601
    author: str
    message: str = field(default="", repr=False, compare=False)
    on: dict[str, Cell] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"branch": self.branch, "commit": self.commit, "pr": self.pr,
                "title": self.title, "date": self.date, "author": self.author,
                "on": {target: cell.to_json() for target, cell in self.on.items()}}


@dataclass(frozen=True)
class Audit:
    """The whole answer: the date it starts at, the branches audited, every change."""

    since: str  # YYYY-MM-DD
    branches: tuple[str, ...]
    changes: tuple[Change, ...]
    missing_branches: dict[str, str] = field(default_factory=dict)  # branch -> why
    prs_unread: str = ""  # why the open PRs were not read ("" when they were)

    def to_json(self) -> dict[str, Any]:
        return {"since": self.since, "branches": list(self.branches),
                "changes": [change.to_json() for change in self.changes]}

    def counts(self) -> dict[tuple[str, str], Counter[str]]:
        """(source branch, target) -> how many changes are in each state."""
        found: dict[tuple[str, str], Counter[str]] = {}
        for change in self.changes:
            for target, cell in change.on.items():
                found.setdefault((change.branch, target), Counter())[cell.state] += 1
        return found

    def by_target(self) -> dict[str, Counter[str]]:
        """target -> how many changes of the other branches are in each state there."""
        found: dict[str, Counter[str]] = {b: Counter() for b in self.branches}
        for change in self.changes:
            for target, cell in change.on.items():
                found[target][cell.state] += 1
        return found

    def missing_clean(self, target: str) -> list[Change]:
        """The changes missing on ``target`` that apply to its head cleanly, oldest first."""
        return sorted((c for c in self.changes
                       if (cell := c.on.get(target)) is not None and cell.state == MISSING
                       and cell.applies), key=lambda c: c.date)
