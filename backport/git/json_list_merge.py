"""Finish a ``git am -3`` that stopped on JSON object files written one member per line, by
merging them entry by entry.

torch-npu keeps lists such as ``test/unsupported_test_cases/.pytorch-disabled-tests.json``: one
``"test name": [...]`` member per line, each release branch with entries of its own. A line
merge conflicts whenever a change removes or adds entries next to lines the branch changed; by
entry the change is clear. The merge refuses (None) whatever it cannot carry exactly: a file
not in that form, a removed or changed entry the branch does not have as the change expects, a
key duplicated where it is touched, an added entry without a neighbour to follow.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from backport.git.apply import ApplyResult, continue_series
from backport.git.run import read_blob
from backport.git.worktree import Worktree


@dataclass(frozen=True)
class _Doc:
    head: str  # the "{" line
    entries: list[tuple[str, str]]  # (key, line as written)
    tail: str  # the "}" line
    end: str  # the text after the "}" line ("\n" or "")


def _read(data: bytes) -> _Doc | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    end = ""
    if lines and lines[-1] == "":
        lines.pop()
        end = "\n"
    if len(lines) < 2 or lines[0].strip() != "{" or lines[-1].strip() != "}":
        return None
    if any(line.endswith("\r") for line in lines):
        return None
    entries = []
    for line in lines[1:-1]:
        member = _bare(line)
        try:
            value = json.loads("{" + member + "}") if member else None
        except ValueError:
            return None
        if not isinstance(value, dict) or len(value) != 1:
            return None
        (key,) = value
        entries.append((key, line))
    return _Doc(lines[0], entries, lines[-1], end)


def _bare(line: str) -> str:
    """The member without its trailing comma and surrounding blanks."""
    stripped = line.strip()
    return stripped[:-1].rstrip() if stripped.endswith(",") else stripped


def _with_comma(line: str, comma: bool) -> str:
    body = line.rstrip()
    blank = line[len(body):]
    if body.endswith(","):
        body = body[:-1]
    return body + ("," if comma else "") + blank


def merge_entries(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """``ours`` with the change from ``base`` to ``theirs`` made entry by entry, or None.

    Lines the change does not touch keep their text; the commas are set so the result is a
    valid object (every member but the last ends with one).
    """
    docs = [_read(data) for data in (base, ours, theirs)]
    if docs[0] is None or docs[1] is None or docs[2] is None:
        return None
    b, o, t = docs[0], docs[1], docs[2]
    before, here, after = (dict(doc.entries) for doc in (b, o, t))
    removed = [k for k in before if k not in after]
    changed = [k for k in after if k in before and _bare(after[k]) != _bare(before[k])]
    added = [k for k, _ in t.entries if k not in before]
    duplicated = {k for doc in (b, o, t)
                  for k, n in Counter(key for key, _ in doc.entries).items() if n > 1}
    if duplicated & {*removed, *changed, *added}:
        return None
    result = list(o.entries)
    for key in removed:
        if key not in here or _bare(here[key]) != _bare(before[key]):
            return None
        result = [(k, line) for k, line in result if k != key]
    for key in changed:
        if key not in here:
            return None
        if _bare(here[key]) == _bare(after[key]):
            continue
        if _bare(here[key]) != _bare(before[key]):
            return None
        result = [(k, after[key] if k == key else line) for k, line in result]
    order = [k for k, _ in t.entries]
    for key in added:
        if key in here:
            if _bare(here[key]) != _bare(after[key]):
                return None
            continue
        keys = [k for k, _ in result]
        index = order.index(key)
        previous = next((k for k in reversed(order[:index]) if k in keys), None)
        if previous is None and index > 0:
            return None  # no neighbour to follow: where it goes is a guess
        at = 0 if previous is None else keys.index(previous) + 1
        result.insert(at, (key, after[key]))
    lines = [_with_comma(line, i < len(result) - 1) for i, (_, line) in enumerate(result)]
    text = "\n".join([o.head, *lines, o.tail]) + o.end
    expected = {k: v for k, v in _values(o.entries).items() if k not in removed}
    expected.update({k: v for k, v in _values(t.entries).items() if k in {*changed, *added}})
    if json.loads(text) != expected:
        return None  # never claim a merge the result does not hold
    return text.encode("utf-8")


def _values(entries: list[tuple[str, str]]) -> dict[str, object]:
    return {k: json.loads("{" + _bare(line) + "}")[k] for k, line in entries}


def finish_by_entries(wt: Worktree, stopped: ApplyResult) -> ApplyResult:
    """Where every file ``git am -3`` stopped on merges entry by entry, write the merges and go
    on, patch after patch (the merged files are ``merged``); otherwise ``stopped`` untouched."""
    result, merged = stopped, []
    while result.status == "conflict" and result.conflicts:
        merges = {}
        for path in result.conflicts:
            base, ours, theirs = (read_blob(wt.path, f":{n}:{path}") for n in (1, 2, 3))
            merge = (merge_entries(base, ours, theirs)
                     if base is not None and ours is not None and theirs is not None else None)
            if merge is None:
                return result
            merges[path] = merge
        for path, data in merges.items():
            (wt.path / path).write_bytes(data)
        merged += [p for p in merges if p not in merged]
        result = continue_series(wt)
    if result.status != "applied":
        return result
    return ApplyResult("applied", result.head, [], result.message, merged)
