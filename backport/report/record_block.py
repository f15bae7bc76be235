"""The branch record a PR body carries for the other hosts: one hidden, versioned JSON line.

The evidence region of each PR ends with ``<!-- backport:record v1 {...} -->``: the branch's
record as :meth:`BranchRecord.published` gives it, in the codec's compact JSON (fields at their
default left out). The human evidence above it is written from the same record and never read
back. The line is inert: it is ASCII and every ``<``, ``>`` and ``&`` inside the JSON is written
as a ``\\u`` escape, so no text from outside ends the comment, opens a marker or starts an HTML
element. Reading it is defensive: a line that is not valid JSON (a key given twice, NaN), of a
version this one does not read, of the wrong shape or of another branch reads as no record.
Keys this version does not know (a later one's) are read past, and written again when this
host rewrites that branch's PR from the record it read there."""

from __future__ import annotations

import json
import re
from typing import Any

from backport.codec import CodecError, decode, encode
from backport.records import SKIP_CAUSE_TEXT, BranchRecord
from backport.report import regions as rg

VERSION = 1
_PREFIX = "<!-- backport:record v"
_LINE = re.compile(r"^<!-- backport:record v(?P<version>\d{1,6}) (?P<json>\{.*\}) -->$", re.M)
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def record_line(rec: BranchRecord, keep: dict[str, Any] | None = None) -> str:
    """The hidden line of ``rec``'s record (published: nothing of this host); ``keep``: the
    JSON it was read from, whose keys this version does not know are written again."""
    text = json.dumps(encode(rec.published(), compact=True, keep=keep), ensure_ascii=True,
                      separators=(",", ":"))
    for char, escape in _ESCAPES.items():  # only inside JSON strings: JSON has no such syntax
        text = text.replace(char, escape)
    return f"{_PREFIX}{VERSION} {text} -->"


def read_record(body: str | None, *, target: str, fork_branch: str) -> BranchRecord | None:
    """The record the evidence region of ``body`` carries for ``target`` (its fork branch
    ``fork_branch``), or None: no region, no line, a version this one does not read, text
    that is no record, or a record of another branch."""
    read = read_line(body, target=target, fork_branch=fork_branch)
    return read[0] if read else None


def read_line(body: str | None, *, target: str,
              fork_branch: str) -> tuple[BranchRecord, dict[str, Any]] | None:
    """:func:`read_record`, with the JSON it was read from (for :func:`record_line`'s
    ``keep``)."""
    if not body:
        return None
    region = rg.find_regions(body).get(rg.EVIDENCE)
    if region is None:
        return None
    match = _LINE.search(region.content(body).replace("\r\n", "\n"))
    if match is None or int(match["version"]) != VERSION:
        return None
    try:
        data = json.loads(match["json"], parse_constant=_no_constant, object_pairs_hook=_unique)
        rec = decode(BranchRecord, data)
    except (CodecError, ValueError, TypeError, RecursionError):
        return None
    if rec.target != target or rec.fork_branch != fork_branch:
        return None
    if rec.test is not None and rec.test.skip_cause not in SKIP_CAUSE_TEXT:
        return None
    return rec.published(), data


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is no JSON number")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each given once (a second one would override the first)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        raise ValueError("a key is given twice")
    return data
