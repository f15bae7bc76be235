"""How a change stands on a target: one pure decision (`classify`) over what the history tells
(`facts.py`), by the rules `apply`, `check` and the already-proposed step use, called, not
copied (patch-id, `pipeline/proposed.py`'s carrier rule, a squash message's own PR, the tests
already there). The order is the decision: landed (the same commit, the same patch-id, a
carrier) → ignored → landed (its title and files: the same fix opened by hand; its tests there)
→ proposed → not-needed → missing (whether it applies is asked of all missing ones at once)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Protocol

from backport.audit.model import (
    BY_ANCESTRY,
    BY_CARRIER,
    BY_PATCH_ID,
    BY_TESTS,
    BY_TITLE,
    IGNORED,
    LANDED,
    MISSING,
    NOT_NEEDED,
    PROPOSED,
    Cell,
    Change,
)


def same_files(change: Collection[str], other: Collection[str]) -> bool:
    """Whether two commits of one title touch the same fix's files: one set holding the other (a
    port adds a test or leaves out a file the branch lacks), sharing at least one."""
    mine, theirs = set(change), set(other)
    return bool(mine & theirs) and (mine <= theirs or theirs <= mine)


def titled_commit(files: frozenset[str],
                  candidates: Sequence[tuple[frozenset[str], str]]) -> str:
    """The commit among ``candidates`` ((files, commit) with the change's title, oldest first)
    that is the change: exactly its ``files``, else `same_files`, else a file in common."""
    exact = next((commit for theirs, commit in candidates if theirs == files), "")
    near = next((commit for theirs, commit in candidates if same_files(files, theirs)), "")
    return exact or near or next((commit for theirs, commit in candidates if files & theirs), "")


def ignored(title: str, patterns: Sequence[str]) -> bool:
    """Whether a title matches one of `audit: {ignore: […]}` (searched, not anchored)."""
    return any(re.search(pattern, title) for pattern in patterns)


_TEST_DIRS = frozenset({"test", "tests", "testing", "unittest", "ut", "st"})


def is_test_path(path: str) -> bool:
    """Whether ``path`` is a test: under a test folder, or named ``test_*`` / ``*_test.*``."""
    parts = path.lower().split("/")
    name = parts[-1].rsplit(".", 1)[0]
    return (any(part in _TEST_DIRS for part in parts[:-1]) or name.startswith("test_")
            or name.endswith("_test"))


def lacks_all(modified: Iterable[str], added: Iterable[str], files: Collection[str],
              folders: Collection[str]) -> bool:
    """The not-needed rule: the change's code (files other than tests, else all) is only files
    the target lacks: none it changes is there, none it adds goes into a folder there."""
    modified, added = list(modified), list(added)
    if not modified and not added:
        return False
    code = [p for p in modified if not is_test_path(p)], [p for p in added if not is_test_path(p)]
    if code[0] or code[1]:
        modified, added = code
    return (not any(path in files for path in modified)
            and not any(posixpath.dirname(path) in folders for path in added))


def folders_of(files: Iterable[str]) -> set[str]:
    """Every folder holding one of ``files`` ("" for the top)."""
    found = {""}
    for path in files:
        head = posixpath.dirname(path)
        while head and head not in found:
            found.add(head)
            head = posixpath.dirname(head)
    return found


class Facts(Protocol):
    """What the history says of a change on a target, asked only when the decision reaches it."""

    def reachable(self, change: Change, target: str) -> bool: ...
    def same_patch(self, change: Change, target: str) -> str: ...
    def carrier(self, change: Change, target: str) -> str: ...
    def same_title(self, change: Change, target: str) -> str: ...
    def ignored(self, change: Change) -> bool: ...
    def tests_there(self, change: Change, target: str) -> str: ...
    def proposed(self, change: Change, target: str) -> int | None: ...
    def lacks_files(self, change: Change, target: str) -> bool: ...


def classify(change: Change, target: str, facts: Facts) -> Cell:
    """The state of ``change`` on ``target``: the first rule that holds, in order."""
    if facts.reachable(change, target):
        return Cell(LANDED, commit=change.commit, why=BY_ANCESTRY)
    for rule, why in ((facts.same_patch, BY_PATCH_ID), (facts.carrier, BY_CARRIER)):
        commit = rule(change, target)
        if commit:
            return Cell(LANDED, commit=commit, why=why)
    if facts.ignored(change):
        return Cell(IGNORED)
    for rule, why in ((facts.same_title, BY_TITLE), (facts.tests_there, BY_TESTS)):
        commit = rule(change, target)
        if commit:
            return Cell(LANDED, commit=commit, why=why)
    pr = facts.proposed(change, target)
    if pr is not None:
        return Cell(PROPOSED, pr=pr)
    if facts.lacks_files(change, target):
        return Cell(NOT_NEEDED)
    return Cell(MISSING)  # whether it applies is asked of all missing ones at once
