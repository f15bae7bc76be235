"""The generated parts of a PR body, and the branch record its evidence region carries.

A region is the text between ``<!-- backport:NAME:start -->`` and ``<!-- backport:NAME:end -->``
(the evidence block: ``<!-- api-validation-evidence:start -->`` / ``:end -->``). A refresh
(`refresh_body`) replaces only what is inside markers and keeps the rest byte for byte; a
marker without its partner (an orphan) is dropped, the text after it stays.

The evidence region ends with ``<!-- backport:record v1 {...} -->``: the published record in the
codec's compact JSON, which other hosts read back (`read_line`), ASCII with ``<>&`` as ``\\u``
escapes so no outside text ends the comment. Invalid JSON (a key twice, NaN), another version,
shape or branch reads as no record; keys a later version added are kept when rewritten.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from backport.codec import CodecError, decode, encode
from backport.records import SKIP_CAUSE_TEXT, BranchRecord

EVIDENCE = "api-validation-evidence"

# A section heading of the PR template: ``# 【测试验证】``.
_SECTION = re.compile(r"^#[ \t]*【(?P<title>[^】\r\n]+)】", re.M)

_MARKER = re.compile(
    r"<!--[ \t]*(?:backport:(?P<name>[A-Za-z0-9_.-]+)|(?P<evidence>api-validation-evidence))"
    r":(?P<kind>start|end)[ \t]*-->"
)


@dataclass(frozen=True)
class Region:
    """One complete region: ``start``/``end`` span the markers, ``inner_*`` the content."""

    name: str
    start: int
    inner_start: int
    inner_end: int
    end: int

    def content(self, text: str) -> str:
        return text[self.inner_start:self.inner_end]


def newline_of(text: str) -> str:
    """The line ending ``text`` uses: CRLF when it has any, else LF."""
    return "\r\n" if "\r\n" in text else "\n"


def wrap(name: str, content: str, newline: str = "\n") -> str:
    """A whole region: markers on their own lines around ``content``."""
    tag = name if name == EVIDENCE else f"backport:{name}"
    return f"<!-- {tag}:start -->{_inner(content, newline)}<!-- {tag}:end -->"


def _inner(content: str, newline: str) -> str:
    content = content.replace("\r\n", "\n").strip("\n")
    if newline != "\n":
        content = content.replace("\n", newline)
    return f"{newline}{content}{newline}" if content else newline


@dataclass(frozen=True)
class Orphan:
    """A marker without its partner: ``kind`` is "start" or "end"."""

    name: str
    kind: str
    start: int
    end: int


def scan(text: str) -> tuple[list[Region], list[Orphan]]:
    """Pair markers per name (an end closes the nearest open start); return regions and orphans."""
    regions: list[Region] = []
    orphans: list[Orphan] = []
    open_starts: dict[str, re.Match[str]] = {}
    for match in _MARKER.finditer(text):
        name = match.group("name") or EVIDENCE
        if match.group("kind") == "start":
            previous = open_starts.get(name)
            if previous is not None:
                orphans.append(Orphan(name, "start", *previous.span()))
            open_starts[name] = match
            continue
        opened = open_starts.pop(name, None)
        if opened is None:
            orphans.append(Orphan(name, "end", *match.span()))
            continue
        regions.append(Region(name, opened.start(), opened.end(), match.start(), match.end()))
    orphans.extend(Orphan(name, "start", *m.span()) for name, m in open_starts.items())
    regions.sort(key=lambda r: r.start)
    orphans.sort(key=lambda o: o.start)
    return regions, orphans


def find_regions(text: str) -> dict[str, Region]:
    """Complete regions by name (the first one when a name occurs twice)."""
    return {region.name: region for region in reversed(scan(text)[0])}


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """Remove the (sorted, disjoint) spans, each with the line ending right after it."""
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        if start < last:
            continue
        pieces.append(text[last:start])
        last = end + next((len(nl) for nl in ("\r\n", "\n") if text.startswith(nl, end)), 0)
    pieces.append(text[last:])
    return "".join(pieces)


def drop_orphan_markers(text: str) -> str:
    """Remove markers that have no partner; the text around them stays."""
    orphans = scan(text)[1]
    return _cut(text, [(o.start, o.end) for o in orphans]) if orphans else text


def replace_region(text: str, name: str, content: str) -> str:
    """Set the content of every complete region ``name`` (in ``text``'s line ending)."""
    inner = _inner(content, newline_of(text))
    pieces: list[str] = []
    last = 0
    for region in scan(text)[0]:
        if region.name != name or region.start < last:  # or nested in an earlier one
            continue
        pieces.append(text[last:region.inner_start])
        pieces.append(inner)
        last = region.inner_end
    pieces.append(text[last:])
    return "".join(pieces)


def restore_region(text: str, name: str, content: str) -> str | None:
    """The orphan start marker of ``name`` made the whole region (the text after it stays
    after the new end marker); None when there is none."""
    starts = [o for o in scan(text)[1] if o.name == name and o.kind == "start"]
    if not starts:
        return None
    orphan = starts[0]
    newline = newline_of(text)
    block = wrap(name, content, newline)
    after = text[orphan.end:]
    if after and not after.startswith(("\n", "\r\n")):
        block += newline
    return text[:orphan.start] + block + after


def insert_region(text: str, name: str, content: str, index: int) -> str:
    """Insert region ``name`` as its own lines at character ``index`` (snapped to a line start)."""
    newline = newline_of(text)
    if index and text[index - 1] != "\n":
        nl = text.find("\n", index)
        index = len(text) if nl < 0 else nl + 1
    before, after = text[:index], text[index:]
    if before and not before.endswith("\n"):
        before += newline
    block = wrap(name, content, newline) + newline
    if before.strip() and not before.endswith(newline + newline):
        block = newline + block
    if after.strip() and not after.startswith(newline):
        block += newline
    return before + block + after


def ensure_single_evidence(text: str) -> str:
    """Keep the first complete evidence block, remove the others (and, once one exists, the
    orphan evidence markers; without one they stay for `restore_region`)."""
    regions, orphans = scan(text)
    blocks = [(r.start, r.end) for r in regions if r.name == EVIDENCE]
    orphan_evidence = [(o.start, o.end) for o in orphans if o.name == EVIDENCE] if blocks else []
    spans = sorted(blocks[1:] + orphan_evidence)
    return _cut(text, spans) if spans else text


# -- refreshing a body -------------------------------------------------------------------------
def _section_of(text: str, index: int) -> str | None:
    titles = [match["title"] for match in _SECTION.finditer(text, 0, index)]
    return titles[-1] if titles else None


def _section_end(text: str, title: str) -> int | None:
    """Where section ``title`` ends in ``text`` (start of the next section), or None."""
    for match in _SECTION.finditer(text):
        if match.group("title") == title:
            following = _SECTION.search(text, match.end())
            return following.start() if following else len(text)
    return None


def _insert_missing(text: str, fresh: str, order: list[Region], region: Region) -> str:
    """Insert ``region`` of ``fresh`` into ``text``: after the nearest earlier region of its
    section, before a later one, at the section's end, or at the end."""
    content = region.content(fresh)
    section = _section_of(fresh, region.start)
    same = [r for r in order if _section_of(fresh, r.start) == section]
    position = same.index(region)
    present = find_regions(text)
    for earlier in reversed(same[:position]):
        if earlier.name in present:
            return insert_region(text, region.name, content, present[earlier.name].end)
    for later in same[position + 1:]:
        if later.name in present:
            return insert_region(text, region.name, content, present[later.name].start)
    end = _section_end(text, section) if section else None
    return insert_region(text, region.name, content, len(text) if end is None else end)


def refresh_body(existing: str, fresh: str) -> str:
    """Copy the generated regions of ``fresh`` into ``existing``; keep everything else."""
    text = ensure_single_evidence(existing)
    order = scan(fresh)[0]
    for region in order:
        content = region.content(fresh)
        if region.name in find_regions(text):
            text = replace_region(text, region.name, content)
            continue
        text = (restore_region(text, region.name, content)
                or _insert_missing(text, fresh, order, region))
    return ensure_single_evidence(drop_orphan_markers(text))


# -- the record line ----------------------------------------------------------------------------
_LINE = re.compile(r"^<!-- backport:record v1 (?P<json>\{.*\}) -->$", re.M)  # version 1
_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def record_line(rec: BranchRecord, keep: dict[str, Any] | None = None) -> str:
    """The hidden line of ``rec`` (published); ``keep``: the JSON it was read from."""
    text = json.dumps(encode(rec.published(), compact=True, keep=keep), ensure_ascii=True,
                      separators=(",", ":"))
    # ``<>&`` occur only inside JSON strings, where ``\\u`` escapes mean the same
    return f"<!-- backport:record v1 {text.translate(_ESCAPES)} -->"


def read_line(body: str | None, *, target: str,
              fork_branch: str) -> tuple[BranchRecord, dict[str, Any]] | None:
    """The record ``body``'s evidence region carries for ``target`` on ``fork_branch``, with
    the JSON it was read from (`record_line`'s ``keep``); None when it carries none."""
    if not body:
        return None
    region = find_regions(body).get(EVIDENCE)
    if region is None:
        return None
    match = _LINE.search(region.content(body).replace("\r\n", "\n"))
    if match is None:
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
    """An object whose keys are each given once."""
    data = dict(pairs)
    if len(data) != len(pairs):
        raise ValueError("a key is given twice")
    return data
