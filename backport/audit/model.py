"""The audit's values and their one JSON form (the contract in docs/audit.md).

One fix, one row: two changes on two branches are one `Fix` when each one's cell on the other's
branch names the other by a `SAME_FIX` rule, closed transitively. Both ways: a small fix found
inside a large change on another branch (a sync of many) is landed there, but not that change."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from backport.config.model import nearest_first

LANDED, PROPOSED, MISSING, NOT_NEEDED, IGNORED = (
    "landed", "proposed", "missing", "not-needed", "ignored")
BRANCH_MISSING = "branch-missing"  # the target branch is not upstream (or not in the cache)
STATES = (LANDED, PROPOSED, MISSING, NOT_NEEDED, IGNORED, BRANCH_MISSING)

# How a landed change was found: a landed cell's ``why`` (the JSON, the page's tooltip).
BY_ANCESTRY, BY_PATCH_ID, BY_CARRIER, BY_TITLE, BY_TESTS, BY_CONTENT = (
    "same commit", "same patch-id", "carries the change", "same title, a file in common",
    "tests already there", "content already there")
BY_SIMILAR = "similar title, a file in common"
# The rules by which two changes are one fix (not the tests rule: it names no change).
SAME_FIX = frozenset({BY_PATCH_ID, BY_CARRIER, BY_TITLE, BY_SIMILAR, BY_CONTENT})


@dataclass(frozen=True)
class Cell:
    """A change's state on one target: the commit that carries it (landed), the open PR
    (proposed), whether it applies to the target's head (missing; None: a blob unread, ``why``)."""

    state: str
    commit: str = ""
    pr: int | None = None
    applies: bool | None = None
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state}
        if self.commit:
            out["commit"] = self.commit
        if self.pr is not None:
            out["pr"] = self.pr
        if self.applies is not None or self.state == MISSING:
            out["applies"] = self.applies
        if self.why and (self.state == LANDED or (self.state == MISSING and self.applies is None)):
            out["why"] = self.why
        return out


@dataclass(frozen=True)
class Change:
    """One change merged on ``branch``: a first-parent commit (a squash merge's ``!N``: pr)."""

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
class Fix:
    """One logical change: ``members`` (oldest first), the first of which it started as."""

    members: tuple[Change, ...]

    @property
    def first(self) -> Change:
        return self.members[0]

    @property
    def branches(self) -> set[str]:
        return {m.branch for m in self.members}

    def pick(self, target: str) -> tuple[Change | None, Cell]:
        """The fix on ``target`` and the member to take: landed where one was merged there, else
        the nearest member's cell in the first of `STATES` found (missing: applying first)."""
        here = next((m for m in self.members if m.branch == target), None)
        if here is not None:  # how the rules saw it there, said by the oldest change that did
            landed = next((m.on[target] for m in self.members if target in m.on
                         and m.on[target].state == LANDED), None)
            return here, landed or Cell(LANDED, commit=here.commit, why="merged on this branch")
        order = nearest_first(target, sorted(self.branches))
        best = min((m for m in self.members if target in m.on), default=None,
                   key=lambda m: (STATES.index(m.on[target].state), not m.on[target].applies,
                                  order.index(m.branch)))
        return (best, best.on[target]) if best else (None, Cell(BRANCH_MISSING))


def _root(parent: dict[str, str], commit: str) -> str:
    while parent[commit] != commit:
        parent[commit] = parent[parent[commit]]
        commit = parent[commit]
    return commit


def group(changes: Sequence[Change]) -> list[Fix]:
    """The fixes of ``changes``, in the order their first-listed change has in ``changes``."""
    parent = {c.commit: c.commit for c in changes}
    links = {(change.commit, cell.commit) for change in changes for cell in change.on.values()
             if cell.state == LANDED and cell.why in SAME_FIX and cell.commit in parent}
    for one, other in links:
        if (other, one) in links:  # each names the other: not a part of a larger change
            a, b = _root(parent, one), _root(parent, other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    members: dict[str, list[Change]] = {}
    for change in changes:
        members.setdefault(_root(parent, change.commit), []).append(change)
    return [Fix(tuple(sorted(found, key=lambda c: c.date))) for found in members.values()]


@dataclass(frozen=True)
class Audit:
    """The whole answer: the date it starts at, the branches audited, every change."""

    since: str  # YYYY-MM-DD
    branches: tuple[str, ...]
    changes: tuple[Change, ...]
    missing_branches: dict[str, str] = field(default_factory=dict)  # branch -> why
    prs_unread: str = ""  # why the open PRs were not read ("" when they were)

    @cached_property
    def fixes(self) -> list[Fix]:
        return group(self.changes)

    def to_json(self) -> dict[str, Any]:
        fix = {m.commit: f.first.commit for f in self.fixes for m in f.members}
        return {"since": self.since, "branches": list(self.branches),
                "changes": [{**change.to_json(), "fix": fix[change.commit]}
                            for change in self.changes]}

    def counts(self) -> dict[tuple[str, str], Counter[str]]:
        """(the branch a fix started on, target) -> how many fixes are in each state."""
        found: dict[tuple[str, str], Counter[str]] = {}
        for fix in self.fixes:
            for target in self.branches:
                if target != fix.first.branch:
                    found.setdefault((fix.first.branch, target), Counter())[
                        fix.pick(target)[1].state] += 1
        return found

    def by_target(self) -> dict[str, Counter[str]]:
        """target -> how many fixes of the other branches are in each state there."""
        found: dict[str, Counter[str]] = {b: Counter() for b in self.branches}
        for (_, target), counter in self.counts().items():
            found[target] += counter
        return found

    def missing_clean(self, target: str) -> list[Change]:
        """Each fix missing on ``target`` that applies there cleanly, once, as the change to
        take (that of the nearest branch that applies), oldest first."""
        found = []
        for fix in self.fixes:
            if target in fix.branches:
                continue
            source, cell = fix.pick(target)
            if source is not None and cell.state == MISSING and cell.applies:
                found.append(source)
        return sorted(found, key=lambda c: c.date)
