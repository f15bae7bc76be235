"""The content rule: a change is already on a target when the target's files hold each hunk's
post-image (context and added lines, in order) and not a pre-image it removes; or, where the
lines around it differ there, each line it adds is in the file (one distinctive) and none it
removes is. Blank lines and trailing white space are ignored; where the change touches code its
tests are not asked (a port adapts them); a moved file is looked for by its name elsewhere in the
tree; a deleted one must be gone. `decide` reads the patches and files (one git process each)
and keeps each answer in the `Store` by commit and target head; the rest is pure."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from backport.audit import history
from backport.audit.facts import Facts
from backport.audit.model import BY_CONTENT, LANDED, MISSING, NOT_NEEDED, Cell, Change
from backport.audit.rules import is_test_path
from backport.git.run import git, read_blobs

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
MOVED_AT_MOST = 3  # a name found more often than this in the target's tree is not followed
DISTINCT = 16  # characters of an added line that may be looked for without its context


@dataclass
class FileDiff:
    """One file of a patch: its paths (``""``: /dev/null), its hunks as (pre-image, post-image)."""

    old: str = ""
    new: str = ""
    binary: bool = False
    hunks: list[tuple[list[str], list[str]]] = field(default_factory=list)


def _path(line: str) -> str:
    name = line[4:].rstrip("\n").split("\t", 1)[0]
    if name == "/dev/null":
        return ""
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse(patch: str) -> list[FileDiff]:
    """The files and hunks of a ``git log -p`` / format-patch text (without renames)."""
    files: list[FileDiff] = []
    pre: list[str] | None = None
    post: list[str] = []
    for line in patch.split("\n"):
        if line.startswith("diff --git "):
            files.append(FileDiff())
            pre = None
        elif not files:
            continue
        elif line.startswith("--- ") and pre is None:
            files[-1].old = _path(line)
        elif line.startswith("+++ ") and pre is None:
            files[-1].new = _path(line)
        elif line.startswith(("GIT binary patch", "Binary files ")):
            files[-1].binary = True
        elif _HUNK.match(line):
            pre, post = [], []
            files[-1].hunks.append((pre, post))
        elif pre is not None and line[:1] in (" ", "-", "+"):
            if line[0] != "+":
                pre.append(line[1:].rstrip())
            if line[0] != "-":
                post.append(line[1:].rstrip())
        elif pre is not None and not line.startswith("\\"):
            pre = None  # the end of the hunks (the email's signature, the next header)
    return files


def _found(block: Sequence[str], lines: Sequence[str]) -> bool:
    """Whether ``block`` is a run of consecutive ``lines``."""
    if not block:
        return True
    size = len(block)
    return any(lines[at:at + size] == list(block) for at, line in enumerate(lines)
               if line == block[0])


def _solid(lines: Sequence[str]) -> list[str]:
    """``lines`` without the blank ones (a blank line more or less is no change)."""
    return [line for line in lines if line.strip()]


def holds(diff: FileDiff, text: str) -> bool:
    """Whether the file ``text`` already holds ``diff``'s change (the rule of the module)."""
    lines = _solid([line.rstrip() for line in text.split("\n")])
    if not diff.old:  # an added file: the target's file is it
        return _found(_solid([x for _, post in diff.hunks for x in post]), lines)
    every = set(lines)
    for pre, post in diff.hunks:
        before, after = _solid(pre), _solid(post)
        if before == after:
            continue
        removes = any(x not in after for x in before)
        if _found(after, lines) and not (removes and _found(before, lines)):
            continue
        if not _lines_held(before, after, every):
            return False
    return True


def _lines_held(before: Sequence[str], after: Sequence[str], every: Collection[str]) -> bool:
    """Each line a hunk adds is in the file (one of `DISTINCT` characters at least), none it
    removes is."""
    added = [x for x in after if x not in before]
    removed = [x for x in before if x not in after]
    if added and max(len(x.strip()) for x in added) < DISTINCT:
        return False
    return all(x in every for x in added) and not any(x in every for x in removed)


def where(diff: FileDiff, tree: Collection[str], by_name: Mapping[str, list[str]]) -> list[str]:
    """The target's paths that may be ``diff``'s file: its own, else its name elsewhere."""
    path = diff.new or diff.old
    if path in tree:
        return [path]
    same = by_name.get(posixpath.basename(path), [])
    return same if len(same) <= MOVED_AT_MOST else []


def meaningful(files: Sequence[FileDiff]) -> bool:
    """Whether a text file of the patch adds or removes a line that is not blank."""
    return any(not f.binary and any(x.strip() for pre, post in f.hunks
                                    for x in set(pre) ^ set(post)) for f in files)


def landed(files: Sequence[FileDiff], tree: Collection[str], by_name: Mapping[str, list[str]],
           read: Mapping[str, str]) -> str:
    """The target's path that shows the change is there ("" when it is not); ``read`` has the
    text of the `where` paths."""
    code = [f for f in files if not is_test_path(f.new or f.old)]
    files = code if meaningful(code) else files
    if not files or any(f.binary for f in files) or not meaningful(files):
        return ""
    shown = ""
    for diff in files:
        if not diff.new:  # deleted: gone from the target
            if diff.old in tree:
                return ""
            continue
        hit = next((p for p in where(diff, tree, by_name) if p in read
                    and holds(diff, read[p])), "")
        if not hit:
            return ""
        shown = shown or hit
    return shown


def probe(files: Sequence[FileDiff]) -> str:
    """The line to find the commit that brought the change by (``git log -S``): the longest
    added, else the longest removed."""
    added = [x for f in files for pre, post in f.hunks for x in post if x not in pre]
    removed = [x for f in files for pre, post in f.hunks for x in pre if x not in post]
    return next((best for lines in (added, removed)
                 if (best := max((x.strip() for x in lines), key=len, default=""))), "")


def _bringer(repo: Path, head: str, path: str, line: str) -> str:
    """The newest commit of ``head`` that added or removed ``line`` in ``path`` (else ``head``)."""
    out = git(["log", "-1", "--format=%H", f"-S{line}", head, "--", path], cwd=repo,
              check=False)
    return out.stdout.strip() if out.ok and out.stdout.strip() else head


def decide(facts: Facts, changes: Sequence[Change]) -> None:
    """Make each `missing` or `not-needed` cell `landed` where the content rule holds, naming
    the commit that brought the change there."""
    repo, store = facts.repo.path, facts.store
    heads = {name: t.head for name, t in facts.targets.items()}
    cells = [(c, t) for c in changes for t, cell in c.on.items()
             if t in heads and cell.state in (MISSING, NOT_NEEDED)]
    todo: dict[str, list[str]] = {}
    for change, target in cells:  # not one whose patch git cannot make (no patch-id)
        if (f"{change.commit}:{heads[target]}" not in store.content
                and store.patch_ids.get(change.commit)):
            todo.setdefault(change.commit, []).append(target)
    parsed = {commit: parse(email.decode("utf-8", "surrogateescape"))
              for commit, email in history.patches_of(repo, list(todo))}
    for target in heads:
        mine = [(commit, parsed.get(commit, [])) for commit, ts in todo.items() if target in ts]
        if mine:
            _decide_on(facts, target, mine)
    for change, target in cells:
        found = store.content.get(f"{change.commit}:{heads[target]}", "")
        if found:
            change.on[target] = Cell(LANDED, commit=found, why=BY_CONTENT)


def _decide_on(facts: Facts, target: str, patches: Sequence[tuple[str, list[FileDiff]]]) -> None:
    repo, store = facts.repo.path, facts.store
    head, tree = facts.targets[target].head, facts.targets[target].entries
    by_name: dict[str, list[str]] = {}
    for path in tree:
        by_name.setdefault(posixpath.basename(path), []).append(path)
    wanted = {p for _, files in patches if meaningful(files) for f in files if f.new
              for p in where(f, tree, by_name)}
    blobs = read_blobs(repo, [f"{head}:{path}" for path in facts.readable(target, wanted)])
    read = {path: blobs[f"{head}:{path}"].decode("utf-8", "surrogateescape")
            for path in wanted if f"{head}:{path}" in blobs}
    found = [(commit, path, probe(files) if path else "") for commit, files in patches
             for path in [landed(files, tree, by_name, read)]]
    asked = [(commit, path, line) for commit, path, line in found if line]
    with ThreadPoolExecutor(max_workers=2) as pool:  # one `git log -S` each
        brought = pool.map(lambda one: _bringer(repo, head, one[1], one[2]), asked)
        store.content.update({f"{commit}:{head}": by for (commit, _, _), by in
                              zip(asked, brought, strict=True)})
    store.content.update({f"{commit}:{head}": "" for commit, _, line in found if not line})
