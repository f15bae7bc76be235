"""How a change stands on a target: one pure decision over what the history tells.

The rules are those `apply`, `check` and the already-proposed step use, called here, not
copied: the patch-id (`git/apply.py` `same_change`), the forms a PR or commit names a source
PR by (`pipeline/proposed.py` `carries`), a GitCode squash message's own PR
(`git/source_pr.py` `squash_number`), the tests already there (`git/python_tests.py`
`all_present`). The order is the decision: landed (the same commit, the same patch-id, a
commit that names the change) → ignored → landed (a commit with its title and its files,
exactly or one set holding the other: the same fix opened on each branch by hand; its tests
there) → proposed → not-needed → missing
(whether it applies is then asked of git for every missing one together).
"""

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
from backport.forge import PullRequest
from backport.git.squash_message import squash_head, squash_number
from backport.pipeline.proposed import carries, commit_carries
from backport.titles import title_key as _title_key


def as_merged_pr(message: str, upstream: str, branch: str) -> PullRequest:
    """A commit on ``branch`` read as the merged PR its squash message says it is (its head
    branch, title and description), so `carries` judges it as it judges a PR."""
    number = squash_number(message)
    title = message.split("\n", 1)[0]
    head = squash_head(message, number) if number is not None else ""
    return PullRequest(number=number or 0, url="", title=title, body=message, head=head,
                       head_repo=upstream, base=branch, state="merged")


def names(pr: PullRequest, number: int, upstream: str, target: str) -> bool:
    """Whether ``pr`` carries PR ``number`` into ``target`` (`carries`, the one carrier rule:
    a mention of ``!N`` in a description carries nothing)."""
    return carries(pr, number, upstream, target) is not None


def carried(message: str, upstream: str, branch: str) -> set[int]:
    """The PRs a commit on ``branch`` carries, other than its own: the one carrier rule
    (`pipeline/proposed.py` `commit_carries`; a mention in prose carries nothing)."""
    return commit_carries(message, upstream, branch)


def title_words(title: str) -> str:
    """A title as the same-title rule compares it: its words, spaces trimmed."""
    return " ".join(title.split())


def title_key(title: str, branches: Iterable[str]) -> str:
    """A title as the same-title rule compares it: without its branch tags (``- v2.7.1``,
    ``[v2.12.0]``, ``_v2.11``, ``[master]``), its words, lower case."""
    return _title_key(title, branches)


def same_files(change: Collection[str], other: Collection[str]) -> bool:
    """What a commit with a change's title must touch to be that change opened by hand on
    another branch: exactly its files, or files that all are among its files or that hold
    all of them (a port that adds a test or leaves out a file the branch lacks), sharing at
    least one."""
    mine, theirs = set(change), set(other)
    return bool(mine & theirs) and (mine <= theirs or theirs <= mine)


def titled_commit(files: frozenset[str],
                  candidates: Sequence[tuple[frozenset[str], str]]) -> str:
    """The commit among ``candidates`` ((its files, commit) of the target's commits with the
    change's title, oldest first) that is the change: one with exactly its ``files``, else
    the oldest with `same_files`, else the oldest with a file in common ("" for none)."""
    exact = next((commit for theirs, commit in candidates if theirs == files), "")
    return exact or next((commit for theirs, commit in candidates if same_files(files, theirs)),
                         "") or next((commit for theirs, commit in candidates if files & theirs), "")


def ignored(title: str, patterns: Sequence[str]) -> bool:
    """Whether a title matches one of `audit: {ignore: […]}` (searched, not anchored)."""
    return any(re.search(pattern, title) for pattern in patterns)


_TEST_DIRS = frozenset({"test", "tests", "testing", "unittest", "ut", "st"})


def is_test_path(path: str) -> bool:
    """Whether ``path`` is a test: under a ``test``/``tests`` folder (any depth), or a file
    named ``test_*`` / ``*_test.*``."""
    parts = path.lower().split("/")
    name = parts[-1].rsplit(".", 1)[0]
    return (any(part in _TEST_DIRS for part in parts[:-1]) or name.startswith("test_")
            or name.endswith("_test"))


def lacks_all(modified: Iterable[str], added: Iterable[str], files: Collection[str],
              folders: Collection[str]) -> bool:
    """The not-needed rule: the change's code (its files other than tests; all its files when
    it has only tests) is only files the target does not have: none of those it changes or
    deletes is there, and none it adds goes into a folder there (a change touching nothing is
    not judged so). A fix of a subsystem the target lacks is not-needed even when it adds
    tests into a folder the target has."""
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
    """What the history says of a change on a target; each is asked only when the decision
    reaches it (the later ones cost more)."""

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
