"""Apply a series whose context lines no longer match, where every change still has one place.

`git am -3` refuses a hunk whose surrounding lines differ on the branch and whose 3-way merge
touches lines the branch changed next to it. A maintainer's resolution made for a neighbour
often fails only that way: its removed lines are all there, but an adjacent line differs. This
module applies such a series with git's reduced context (``git am -C0``), and only when every
hunk whose full text is not in the file has a *core* — the lines from its first change to its
last, inner context included — that removes at least one line and occurs exactly once in the
file as it stands before that patch. Then the place of each change is certain; a hunk that
only adds lines, or whose core is found twice or not at all, refuses the whole series.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from backport.config.patchfiles import FileDiff, Hunk, Patch
from backport.errors import BackportError
from backport.git.apply import SAFE_CONFIG, ApplyResult, am_in_progress, committer_env, mailbox
from backport.git.worktree import Worktree

# As the strict apply (see git.apply._AM), without --3way and with no context required.
_AM_LOOSE = [*SAFE_CONFIG, "am", "-C0", "--keep-cr", "--committer-date-is-author-date",
             "--no-message-id", "--no-scissors", "--no-signoff", "--whitespace=nowarn"]


def _lines(data: bytes) -> list[str]:
    """A file's lines as the patch reader sees them: no line ends, no trailing CR."""
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


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
    core = hunk.core
    removes = any(line[:1] == "-" for line in hunk.lines)
    return "core" if removes and _count(lines, core) == 1 else "no"


def loose_files(wt: Worktree, diffs: Sequence[FileDiff]) -> list[str] | None:
    """The files whose hunks need their context ignored, or None when a hunk has no certain
    place in the worktree's HEAD (or the patch holds a binary change)."""
    loose = []
    for diff in diffs:
        if diff.binary:
            return None
        if diff.old is None or not diff.hunks:
            continue  # a new file, a rename or a mode change: nothing to place
        out = wt.git(["cat-file", "blob", f"HEAD:{diff.old}"], check=False)
        if not out.ok:
            return None
        lines = _lines(out.raw)
        places = [_placed(hunk, lines) for hunk in diff.hunks]
        if "no" in places:
            return None
        if "core" in places:
            loose.append(diff.old)
    return list(dict.fromkeys(loose))


def apply_loose(wt: Worktree, patches: Sequence[Patch], *,
                env: Mapping[str, str] | None = None) -> ApplyResult:
    """Apply ``patches`` one by one with reduced context where each change has one place.

    ``applied`` lists the files placed without their context in ``loose``; ``conflict``
    means a patch had a hunk without a certain place, or git still refused it: the worktree is
    then back where it was (no `git am` left in progress).
    """
    if am_in_progress(wt):
        raise BackportError("conflict", f"a git am is already in progress in {wt.path}; run "
                            "continue or abort first.")
    base = wt.head()
    loose: list[str] = []
    run_env = {**(env or {}), **committer_env(wt, patches[0].author)}
    for patch in patches:
        files = loose_files(wt, patch.files) if patch.commits == 1 else None
        refused = files is None
        if not refused:
            out = wt.git(_AM_LOOSE, env=run_env, stdin=mailbox([patch]), check=False)
            refused = not out.ok
        if refused:
            if am_in_progress(wt):
                wt.git([*SAFE_CONFIG, "am", "--abort"], check=False)
            wt.git(["reset", "--quiet", "--hard", base])
            name = patch.name
            return ApplyResult("conflict", base, [], f"{name} has a change without one certain "
                               "place on this branch")
        loose += [f for f in files or [] if f not in loose]
    head = wt.head()
    return ApplyResult("applied", head, [], f"applied {len(patches)} patch(es) on top of "
                       f"{base[:9]} with reduced context", loose=loose)
