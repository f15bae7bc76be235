"""A merged PR read from the upstream's history alone: its GitCode squash commit.

What the local forge learns of a real PR it never held (`--from-pr N` offline): the commit on a
mapped branch whose own squash line is ``!N merge <head> into <that branch>`` (the oldest, as
``git/source_pr.py`` takes it), with the PR's title, description and author as GitCode wrote
them into the message, the commit's committer date as the merge time and the files it changes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from backport.git.cache import TRACKING, RepoCache
from backport.git.run import git
from backport.git.source_message import GENERATED
from backport.git.source_pr import squash_names

_TRAILER = re.compile(r"^See merge request: \S+!\d+\s*$", re.MULTILINE)
# The lines GitCode writes after the title; a block without the title starts with one.
_FIELD = re.compile(r"(Created-by|Commit-by|Merged-by|Description|See merge request):")


@dataclass(frozen=True)
class SquashMerge:
    """PR ``number`` as its squash commit ``sha`` on ``base`` tells it."""

    number: int
    sha: str
    base: str
    head: str
    title: str
    body: str
    author: str
    merged_at: str  # the committer date, ISO 8601 with its zone
    files: tuple[tuple[str | None, str | None], ...]  # (old, new) per file, as a forge lists


def _merge_line(message: str, number: int) -> re.Match[str] | None:
    return re.search(rf"^\s*!{number} merge (\S+) into (\S+)\s*$", message, re.MULTILINE)


def _field(block: str, name: str) -> str:
    found = re.search(rf"^{name}:[ \t]*(.*)$", block, re.MULTILINE)
    return found.group(1).strip() if found else ""


def read_message(message: str, number: int, author: str) -> tuple[str, str, str]:
    """(title, body, author) of PR ``number`` from its squash message: the title GitCode
    repeats after the ``!N merge`` line (else the subject), the ``Description:`` up to the
    trailer, the ``Created-by:`` login (else the commit's ``author``)."""
    line = _merge_line(message, number)
    block = message[line.end():] if line else ""
    title = next((t.strip() for t in block.splitlines() if t.strip()), "")
    if _FIELD.match(title):
        title = ""
    subject = message.strip().splitlines()[0].strip() if message.strip() else ""
    body = block.partition("\nDescription:")[2] if "\nDescription:" in block else ""
    body = _TRAILER.split(body, 1)[0].strip()
    if not body:
        body = message.split(GENERATED, 1)[0].strip()
    return title or subject, body, _field(block, "Created-by") or author


def _files(repo: RepoCache, sha: str) -> tuple[tuple[str | None, str | None], ...]:
    """The files ``sha`` changes against its first parent (a rename as its two names: trees
    only, so no blob of a blobless cache is fetched)."""
    out = git(["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--name-status",
               f"{sha}^", sha], cwd=repo.path, env=repo.env).stdout.split("\0")
    pairs = zip(out[0::2], out[1::2], strict=False)
    return tuple((None, path) if status == "A" else (path, None) if status == "D"
                 else (path, path) for status, path in pairs if status and path)


def find_squash_merge(repo: RepoCache, branches: Sequence[str],
                      number: int) -> SquashMerge | None:
    """PR ``number``'s squash merge on one of ``branches`` (fetched into ``repo`` first): the
    oldest commit whose own squash line names it and the branch it is on; None when none."""
    found: list[tuple[int, str, str, str, str, str]] = []
    for branch in branches:
        out = git(["log", "--first-parent", "--format=%H%x00%ct%x00%cI%x00%an%x00%B%x1e",
                   "--fixed-strings", f"--grep=!{number} merge", f"{TRACKING}{branch}", "--"],
                  cwd=repo.path, env=repo.env).stdout
        for record in out.split("\x1e"):
            fields = record.strip("\n").split("\x00", 4)
            if len(fields) < 5 or not fields[1].isdigit():
                continue
            sha, time, when, author, message = fields
            line = _merge_line(message, number)
            if line and line.group(2) == branch and squash_names(message, number):
                found.append((int(time), sha, branch, when, author, message))
    if not found:
        return None
    _, sha, branch, when, author, message = min(found)
    line = _merge_line(message, number)
    assert line is not None
    title, body, login = read_message(message, number, author)
    return SquashMerge(number=number, sha=sha, base=branch, head=line.group(1), title=title,
                       body=body, author=login, merged_at=when, files=_files(repo, sha))
