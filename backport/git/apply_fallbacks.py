"""Two ways to carry a maintainer's series where ``git am -3`` refuses it (a resolution made for
a neighbour often fails only on a line next to a change).

Its context ignored (``git am -C0``), only where every hunk whose text is not in the file has a
*core* (its lines from first change to last) that removes a line and occurs exactly once there.
And, where ``git am -3`` stopped only on JSON objects of one member per line (torch-npu's
``.pytorch-disabled-tests.json``), merged entry by entry, refusing (None) what it cannot carry
exactly: another form, an entry not as expected, a duplicated key, an added entry without a
neighbour to follow.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from backport.config.patchfiles import FileDiff, Patch
from backport.git.apply import (
    AM_OPTIONS,
    SAFE_CONFIG,
    ApplyResult,
    am_in_progress,
    committer_env,
    continue_series,
    file_lines,
    mailbox,
    refuse_in_progress,
)
from backport.git.run import read_blob
from backport.git.worktree import Worktree


def _count(haystack: list[str], needle: tuple[str, ...], limit: int = 2) -> int:
    """How often ``needle`` occurs in ``haystack`` as consecutive lines (up to ``limit``)."""
    size = len(needle)
    hits = (start for start in range(len(haystack) - size + 1) if needle
            and haystack[start] == needle[0] and tuple(haystack[start:start + size]) == needle)
    return len(list(itertools.islice(hits, limit)))


def context_ignored_files(wt: Worktree, diffs: Sequence[FileDiff]) -> list[str] | None:
    """The files whose hunks need their context ignored; None: a hunk has no certain place."""
    found = []
    for diff in diffs:
        if diff.binary:
            return None
        if diff.old is None or not diff.hunks:
            continue  # a new file, a rename or a mode change: nothing to place
        data = read_blob(wt.path, f"HEAD:{diff.old}")
        if data is None:
            return None
        lines = file_lines(data)
        loose = [hunk for hunk in diff.hunks if not _count(lines, hunk.preimage, 1)]
        if any(_count(lines, hunk.core) != 1 or all(line[:1] != "-" for line in hunk.lines)
               for hunk in loose):
            return None  # a hunk whose core is not in one place, or that removes nothing
        if loose:
            found.append(diff.old)
    return list(dict.fromkeys(found))


def apply_ignoring_context(wt: Worktree, patches: Sequence[Patch]) -> ApplyResult:
    """Apply ``patches`` with ``git am -C0``; on a ``conflict`` the worktree is as it was."""
    refuse_in_progress(wt)
    base = wt.head()
    placed: list[str] = []
    run_env = committer_env(wt, patches[0].author)
    for patch in patches:
        files = context_ignored_files(wt, patch.files) if len(patch.subjects) == 1 else None
        if files is None or not wt.git([*SAFE_CONFIG, "am", "-C0", *AM_OPTIONS], env=run_env,
                                       stdin=mailbox([patch]), check=False).ok:
            if am_in_progress(wt):
                wt.git([*SAFE_CONFIG, "am", "--abort"], check=False)
            wt.git(["reset", "--quiet", "--hard", base])
            return ApplyResult("conflict", base, [], f"{patch.name} has a change without one "
                                                     "certain place on this branch")
        placed += [f for f in files if f not in placed]
    return ApplyResult("applied", wt.head(), [], f"applied {len(patches)} patch(es) on top of "
                       f"{base[:9]} with reduced context", context_ignored=placed)


@dataclass(frozen=True)
class _OnePerLine:
    """A JSON object of one member per line: its ``{`` line, (key, line), ``}`` line, end."""

    head: str
    entries: list[tuple[str, str]]
    tail: str
    end: str  # "\n" or ""


def _read_one_per_line(data: bytes | None) -> _OnePerLine | None:
    try:
        lines = (data or b"").decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None
    end = "\n" if lines[-1] == "" else ""
    if end:
        lines.pop()
    if (len(lines) < 2 or lines[0].strip() != "{" or lines[-1].strip() != "}"
            or any(line.endswith("\r") for line in lines)):
        return None
    entries = []
    for line in lines[1:-1]:
        try:
            value = json.loads("{" + _member(line) + "}")  # parsed, always an object
        except ValueError:
            return None
        if len(value) != 1:
            return None
        entries.append((*value, line))
    return _OnePerLine(lines[0], entries, lines[-1], end)


def _member(line: str) -> str:
    """The member without its trailing comma and surrounding blanks."""
    stripped = line.strip()
    return stripped[:-1].rstrip() if stripped.endswith(",") else stripped


def merge_entries(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> bytes | None:
    """``ours`` with the change from ``base`` to ``theirs`` made entry by entry, or None."""
    b, o, t = _read_one_per_line(base), _read_one_per_line(ours), _read_one_per_line(theirs)
    if b is None or o is None or t is None:
        return None
    before, here, after = (dict(doc.entries) for doc in (b, o, t))
    removed = [k for k in before if k not in after]
    changed = [k for k in after if k in before and _member(after[k]) != _member(before[k])]
    added = [k for k, _ in t.entries if k not in before]
    duplicated = {k for doc in (b, o, t)
                  for k, n in Counter(key for key, _ in doc.entries).items() if n > 1}
    if duplicated & {*removed, *changed, *added}:
        return None
    result = list(o.entries)
    order = [k for k, _ in t.entries]
    for key in [*removed, *changed, *added]:
        now, was, want = (_member(doc[key]) if key in doc else None for doc in (here, before, after))
        if want is not None and now == want:
            continue  # ours made the same change
        if now != was:
            return None
        if was is not None:  # removed or changed
            result = [(k, after[key] if k == key else line) for k, line in result
                      if k != key or want is not None]
            continue
        keys = [k for k, _ in result]
        index = order.index(key)
        previous = next((k for k in reversed(order[:index]) if k in keys), None)
        if previous is None and index > 0:
            return None  # no neighbour to follow: where it goes is a guess
        result.insert(0 if previous is None else keys.index(previous) + 1, (key, after[key]))
    lines = [line.rstrip().removesuffix(",") + ("," if i < len(result) - 1 else "")
             + line[len(line.rstrip()):] for i, (_, line) in enumerate(result)]  # commas moved
    text = "\n".join([o.head, *lines, o.tail]) + o.end
    expected = {k: v for k, v in _values(o.entries).items() if k not in removed}
    expected.update({k: v for k, v in _values(t.entries).items() if k in {*changed, *added}})
    if json.loads(text) != expected:
        return None  # never claim a merge the result does not hold
    return text.encode("utf-8")


def _values(entries: list[tuple[str, str]]) -> dict[str, object]:
    return {k: json.loads("{" + _member(line) + "}")[k] for k, line in entries}


def finish_by_entries(wt: Worktree, stopped: ApplyResult) -> ApplyResult:
    """Merge every file ``git am -3`` stopped on and go on, or return ``stopped`` untouched."""
    result, merged = stopped, []
    while result.status == "conflict" and result.conflicts:
        merges = {}
        for path in result.conflicts:
            merge = merge_entries(*(read_blob(wt.path, f":{n}:{path}") for n in (1, 2, 3)))
            if merge is None:
                return result
            merges[path] = merge
        for path, data in merges.items():
            (wt.path / path).write_bytes(data)
        merged += [p for p in merges if p not in merged]
        result = continue_series(wt)
    return replace(result, merged=merged) if result.status == "applied" else result
