"""Apply a series with its context lines ignored (``git am -C0``), only where every change
still has one certain place.

``git am -3`` refuses a hunk whose surrounding lines differ on the branch and whose 3-way merge
touches lines the branch changed next to it; a maintainer's resolution made for a neighbour
often fails only that way. Such a series is applied here when every hunk whose full text is not
in the file has a *core* (its lines from the first change to the last, inner context included)
that removes a line and occurs exactly once in the file as it stands before that patch. A hunk
that only adds lines, or whose core is found twice or not at all, refuses the whole series.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from backport.config.patchfiles import FileDiff, Hunk, Patch
from backport.git.apply import (
    AM_OPTIONS,
    SAFE_CONFIG,
    ApplyResult,
    am_in_progress,
    committer_env,
    file_lines,
    mailbox,
    refuse_in_progress,
)
from backport.git.run import read_blob
from backport.git.worktree import Worktree


def _count(haystack: list[str], needle: tuple[str, ...], limit: int = 2) -> int:
    """How often ``needle`` occurs in ``haystack`` as consecutive lines (counting up to ``limit``)."""
    if not needle:
        return 0
    found, first, size = 0, needle[0], len(needle)
    for start in range(len(haystack) - size + 1):
        if haystack[start] == first and tuple(haystack[start:start + size]) == needle:
            found += 1
            if found >= limit:
                break
    return found


def _placed(hunk: Hunk, lines: list[str]) -> str:
    """"exact" when the whole hunk is in the file, "core" when only its one core place is,
    else "no"."""
    if _count(lines, hunk.preimage, 1):
        return "exact"
    removes = any(line[:1] == "-" for line in hunk.lines)
    return "core" if removes and _count(lines, hunk.core) == 1 else "no"


def context_ignored_files(wt: Worktree, diffs: Sequence[FileDiff]) -> list[str] | None:
    """The files whose hunks need their context ignored, or None when a hunk has no certain
    place in the worktree's HEAD (or the patch holds a binary change)."""
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
        places = [_placed(hunk, lines) for hunk in diff.hunks]
        if "no" in places:
            return None
        if "core" in places:
            found.append(diff.old)
    return list(dict.fromkeys(found))


def apply_ignoring_context(wt: Worktree, patches: Sequence[Patch], *,
                           env: Mapping[str, str] | None = None) -> ApplyResult:
    """Apply ``patches`` one by one with ``git am -C0`` where each change has one place; the
    files so placed are the result's ``loose``. ``conflict``: a hunk had no certain place or
    git still refused it, and the worktree is back where it was (no ``git am`` in progress)."""
    refuse_in_progress(wt)
    base = wt.head()
    placed: list[str] = []
    run_env = {**(env or {}), **committer_env(wt, patches[0].author)}
    for patch in patches:
        files = context_ignored_files(wt, patch.files) if patch.commits == 1 else None
        if files is None or not wt.git([*SAFE_CONFIG, "am", "-C0", *AM_OPTIONS], env=run_env,
                                       stdin=mailbox([patch]), check=False).ok:
            if am_in_progress(wt):
                wt.git([*SAFE_CONFIG, "am", "--abort"], check=False)
            wt.git(["reset", "--quiet", "--hard", base])
            return ApplyResult("conflict", base, [], f"{patch.name} has a change without one "
                                                     "certain place on this branch")
        placed += [f for f in files if f not in placed]
    return ApplyResult("applied", wt.head(), [], f"applied {len(patches)} patch(es) on top of "
                       f"{base[:9]} with reduced context", loose=placed)
