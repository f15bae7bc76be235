"""GitCode's squash message of a PR, and a backport's message: text rules, no git.

GitCode's squash commit holds the PR's own message, then its block (``GENERATED``: the
``!N merge <head> into <base>`` line, the title, ``Created-by:``, ``Description:``, the trailer
``See merge request: …!N``). Anyone can quote ``!N``: the last trailer decides.
"""

from __future__ import annotations

import re

from backport.numerals import DIGITS
from backport.numerals import number as bounded

GENERATED = "# message auto-generated for no-merge-commit merge:"
_TRAILER = re.compile(rf"^See merge request: \S+?!({DIGITS})\s*$", re.MULTILINE)
_MERGE_LINE = re.compile(rf"^\s*!({DIGITS}) merge (\S+) into (\S+)\s*$", re.MULTILINE)
# The lines GitCode writes after the title; a block without the title starts with one.
_FIELD = re.compile(r"(Created-by|Commit-by|Merged-by|Description|See merge request):")
# A line in one of this tool's trailer forms: only the tool writes them in a backport.
_TOOL_FORM = re.compile(r"^\s*(?:Backport of \S*!\S*|\(cherry picked from commit \S*\))\s*$")


def merge_line(message: str, number: int) -> re.Match[str] | None:
    """The ``!N merge <head> into <base>`` line of PR ``number`` in ``message``."""
    return next((m for m in _MERGE_LINE.finditer(message) if m.group(1) == str(number)), None)


def squash_names(message: str, number: int) -> bool:
    """Whether ``message`` is GitCode's squash message of PR ``number`` (not ``!N0``): by its last
    trailer if any (the PR's own text may quote another's), else its ``!N merge`` line."""
    trailers = _TRAILER.findall(message)
    if trailers:
        return trailers[-1] == str(number)
    return merge_line(message, number) is not None


def squash_number(message: str) -> int | None:
    """The PR whose GitCode squash message ``message`` is, or None when it is none."""
    trailers = _TRAILER.findall(message)
    said = [trailers[-1]] if trailers else [m.group(1) for m in _MERGE_LINE.finditer(message)]
    found = (bounded(digits) for digits in said)
    return next((n for n in found if n is not None and squash_names(message, n)), None)


def squash_head(message: str, number: int) -> str:
    """The head branch the generated block of PR ``number``'s squash message names ("": none)."""
    line = merge_line(message.split(GENERATED, 1)[-1], number)
    return line.group(2) if line else ""


def read_message(message: str, number: int, author: str) -> tuple[str, str, str]:
    """(title, body, author) of PR ``number`` as its squash message tells them."""
    line = merge_line(message, number)
    block = message[line.end():] if line else ""
    title = next((t.strip() for t in block.splitlines() if t.strip()), "")
    title = "" if _FIELD.match(title) else title
    subject = message.strip().splitlines()[0].strip() if message.strip() else ""
    body = (_TRAILER.split(block.partition("\nDescription:")[2], 1)[0].strip()
            or message.split(GENERATED, 1)[0].strip())
    created = re.search(r"^Created-by:[ \t]*(.*)$", block, re.MULTILINE)
    return title or subject, body, (created.group(1).strip() if created else "") or author


def one_line(text: str) -> str:
    """``text`` (a title from outside) as one line: whitespace and control characters folded."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def own_message(message: str) -> str:
    """The part of a commit message its author wrote (before the block, less the trailer)."""
    own = message.split(GENERATED, 1)[0]
    lines = [line.rstrip() for line in own.splitlines() if not _TRAILER.match(line)]
    return "\n".join(lines).strip()


def backport_message(message: str, *, title: str, sha: str, source_ref: str) -> str:
    """The backport's message: ``title``, the change's own words, and where it comes from."""
    own = "\n".join(line for line in own_message(message).splitlines()
                    if not _TOOL_FORM.match(line)).strip()
    subject, _, rest = own.partition("\n")
    heading = one_line(title) or one_line(subject) or f"Backport of {source_ref}"
    body = rest.strip() if one_line(subject) == heading else own
    parts = [heading, body] if body else [heading]
    parts.append(f"Backport of {source_ref}.\n(cherry picked from commit {sha})")
    return "\n\n".join(parts) + "\n"
