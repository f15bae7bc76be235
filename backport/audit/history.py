"""What the audit reads from the cache repository (each branch's first-parent changes, what a
target's history holds, patch-ids and files of commits, the tests a change adds and whether a
target has them; whether a change applies: `blobs.py`), and the `Store` that keeps it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backport.config.patchfiles import Patch, parse_patch
from backport.errors import BackportError
from backport.git.apply import commit_patch_ids
from backport.git.python_tests import (
    AddedTest,
    added_tests,
    all_present,
    defined_tests,
    introduced_by,
    pre_images,
)
from backport.git.run import git, read_blobs
from backport.jsonfile import read_json, write_json

STORE_VERSION = 1
CONTENT_RULE = 4  # the content rule's version: answers of another are asked again
_KEPT = ("patch_ids", "files", "applies", "added", "present", "content")


class Store:
    """What the audit keeps between runs, one JSON file: by commit ``patch_ids`` ("": no patch),
    ``files`` ([changed or deleted, added]), ``added`` (its tests); by ``<commit>:<target head>``
    ``applies``, ``present`` (the commit that added its tests there) and ``content`` (the commit
    that brought it there, "" for none). A torn file or one of another version starts empty."""

    patch_ids: dict[str, str]
    files: dict[str, list[list[str]]]
    applies: dict[str, bool]
    added: dict[str, list[str]]
    present: dict[str, str]
    content: dict[str, str]

    def __init__(self, path: Path) -> None:
        self.path = path
        data: Any = read_json(path, None)
        known = isinstance(data, dict) and data.get("version") == STORE_VERSION
        for key in _KEPT:
            kept = known and (key != "content" or data.get("content_rule") == CONTENT_RULE)
            setattr(self, key, dict(data.get(key) or {}) if kept else {})

    def paths(self, commit: str) -> list[str]:
        """The files ``commit`` changes, deletes or adds."""
        return [path for part in self.files.get(commit, [[], []]) for path in part]

    def save(self) -> None:
        """Write the file whole; a folder that cannot be written keeps nothing."""
        with suppress(OSError):
            write_json(self.path, {"version": STORE_VERSION, "content_rule": CONTENT_RULE,
                                   **{key: getattr(self, key) for key in _KEPT}})


@dataclass(frozen=True)
class Commit:
    """A first-parent commit: sha, committer time (epoch seconds), author name, message."""

    sha: str
    time: int
    author: str
    message: str


def first_parent(repo: Path, ref: str, since: int) -> list[Commit]:
    """The first-parent commits of ``ref`` committed at or after ``since``, newest first."""
    out = git(["log", "--first-parent", f"--since={since}", "--format=%H%x00%ct%x00%an%x00%B%x1e",
               ref, "--"], cwd=repo)
    found = []
    for record in out.stdout.split("\x1e"):
        parts = record.lstrip("\n").split("\x00", 3)
        if len(parts) == 4 and parts[1].isdigit() and int(parts[1]) >= since:
            found.append(Commit(parts[0], int(parts[1]), parts[2], parts[3].strip("\n")))
    return found


def reachable(repo: Path, ref: str, since: int) -> set[str]:
    """Every commit reachable from ``ref`` committed at or after ``since``."""
    out = git(["rev-list", f"--since={since}", ref, "--"], cwd=repo)
    return set(out.stdout.split())


def tree_entries(repo: Path, ref: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, object) of every file of ``ref``'s tree (trees only: no blob is read)."""
    out = git(["-c", "core.quotepath=false", "ls-tree", "-r", "-z", "--full-tree", ref],
              cwd=repo)
    found = {}
    for record in out.stdout.split("\0"):
        meta, _, path = record.partition("\t")
        parts = meta.split()
        if path and len(parts) == 3:
            found[path] = (parts[0], parts[2])
    return found


def log_of(repo: Path, commits: Sequence[str], *args: str) -> tuple[bool, bytes]:
    """``git log --no-walk`` of ``commits`` in that order, each against its first parent."""
    out = git(["-c", "core.quotepath=false", "log", "--no-walk=unsorted", "--stdin",
               "--diff-merges=first-parent", "--no-renames", "--no-color", "--no-ext-diff",
               *args],
              cwd=repo, stdin="".join(f"{c}\n" for c in commits).encode(), check=False,
              timeout=3600)
    return out.ok, out.raw


def fill_patch_ids(repo: Path, commits: Sequence[str], store: Store) -> None:
    """The patch-id of each of ``commits`` the store lacks ("" for one git cannot show)."""
    todo = [c for c in dict.fromkeys(commits) if c not in store.patch_ids]
    while todo:
        ok, raw = log_of(repo, todo, "-p", "--format=commit %H")
        ids = commit_patch_ids(repo, raw)
        shown = [m.decode() for m in _COMMIT_LINE.findall(raw)]
        store.patch_ids.update({sha: ids.get(sha, "") for sha in (shown if ok else shown[:-1])})
        if ok:
            return
        failed = shown[-1] if shown else todo[0]
        store.patch_ids[failed] = ""
        todo = [c for c in todo if c not in store.patch_ids]


def fill_files(repo: Path, commits: Sequence[str], store: Store) -> None:
    """The files each of ``commits`` changes or deletes, and those it adds (trees only)."""
    todo = [c for c in dict.fromkeys(commits) if c not in store.files]
    if not todo:
        return
    _, raw = log_of(repo, todo, "--name-status", "--format=commit %H")
    current: list[list[str]] | None = None
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        if line.startswith("commit "):
            current = store.files.setdefault(line[7:].strip(), [[], []])
        elif current is not None and "\t" in line:
            status, _, path = line.partition("\t")
            current[1 if status.startswith("A") else 0].append(path)
    for sha in todo:
        store.files.setdefault(sha, [[], []])


_COMMIT_LINE = re.compile(rb"^commit ([0-9a-f]{40})$", re.MULTILINE)
_EMAIL_FROM = re.compile(rb"^From ([0-9a-f]{40}) Mon Sep 17 00:00:00 2001\n", re.MULTILINE)
_ADDS_DEF = re.compile(rb"^\+(?!\+\+ ).*\bdef\b", re.MULTILINE)  # an added line with `def`
CHUNK = 200  # commits per `git log` of whole patches (bounds what is held in memory)


# The files `git/python_tests.py` `is_python_test` names, as pathspecs.
PYTHON_TESTS = (":(glob)**/test_*.py", ":(glob)**/*_test.py")


def patches_of(repo: Path, commits: Sequence[str],
               paths: Sequence[str] = ()) -> Iterator[tuple[str, bytes]]:
    """(commit, its format-patch email against its first parent) for each of ``commits`` git can
    show, `CHUNK` per ``git log``; only the files of ``paths`` (pathspecs) when given."""
    todo = list(dict.fromkeys(commits))
    limit = ("--", *paths) if paths else ()
    while todo:
        chunk, todo = todo[:CHUNK], todo[CHUNK:]
        ok, raw = log_of(repo, chunk, "-p", "--binary", "--full-index", "--pretty=email", *limit)
        starts = [m for m in _EMAIL_FROM.finditer(raw) if m.group(1).decode() in chunk]
        for index, match in enumerate(starts):
            end = starts[index + 1].start() if index + 1 < len(starts) else len(raw)
            if ok or index + 1 < len(starts):  # a failed log's last one may be cut short
                yield match.group(1).decode(), raw[match.start():end]
        if not ok:
            shown = [m.group(1).decode() for m in starts]
            failed = shown[-1] if shown else chunk[0]
            todo = [c for c in chunk if c not in shown and c != failed] + todo


def tests_added(repo: Path, emails: Sequence[tuple[str, bytes]]) -> dict[str, list[str]]:
    """commit -> the tests its format-patch email adds (``path::Class::name``), read as `apply`
    reads a series' (a patch adding no line with ``def`` is not parsed)."""
    patches: dict[str, Patch | None] = {}
    for commit, email in emails:
        patches[commit] = None
        if _ADDS_DEF.search(email):
            with suppress(BackportError):  # a commit the parser cannot read has no tests to tell
                patches[commit] = parse_patch(email, Path(f"{commit[:12]}.patch"))
    blobs = read_blobs(repo, [oid for patch in patches.values() if patch is not None
                              for oid in pre_images([patch])])
    return {commit: [test.node_id for test in added_tests(repo, [patch], blobs.get)]
            if patch is not None else [] for commit, patch in patches.items()}


def tests_there(repo: Path, added: Sequence[str], head: str, trees: dict[str, ast.Module | None],
                blobs: Mapping[str, bytes]) -> str:
    """The already-present rule: where ``head`` defines every test of ``added``, the commit that
    added the first there (else ""); ``trees``: its files parsed so far, ``blobs``: those read."""
    tests = [AddedTest.from_node_id(node) for node in added]
    defined = defined_tests(repo, head, tests, trees, blobs.get)
    if not all_present(tests, defined):
        return ""
    test = defined[0][0]
    by = introduced_by(repo, head, test.path, test.name)
    return by[0] if by else head[:9]
