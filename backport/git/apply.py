"""Apply a patch series with ``git am -3``: conflicts, ``continue`` / ``abort``, already-applied
by patch-id (``git patch-id --stable``: the one identity of a change across branches, also
whether a PR's commits carry a change), and the tree a series makes on a base afresh.

Every step takes the loaded `Patch` values (``git am`` reads their bytes on its standard input;
no patch file is opened again); ``author`` is the committer where git has no identity. A
``conflict`` leaves ``git am`` in progress for the user. No hook or signing runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from backport.config.patchfiles import Patch, read_diff
from backport.errors import BackportError
from backport.git.run import GitOutput, git, token_git
from backport.git.worktree import Worktree
from backport.redact import redact

if TYPE_CHECKING:
    from backport.git.cache import RepoCache, RunMemo

Status = Literal["applied", "conflict", "already-applied"]

SAFE_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false"]
# --keep-cr keeps CRLF files byte for byte; --committer-date-is-author-date gives a re-apply on
# the same base the same commit, so a re-run after a crash finds its own push on the fork.
AM_OPTIONS = ["--keep-cr", "--committer-date-is-author-date", "--no-message-id",
              "--no-scissors", "--no-signoff", "--whitespace=nowarn"]
_ALREADY = "No changes -- Patch already applied."
_PATCH_FAILED = re.compile(r"^error: patch failed: (?P<path>.+):\d+$", re.M)
_NOT_APPLY = re.compile(r"^error: (?P<path>.+): (?:patch does not apply|does not exist in index"
                        r"|already exists in (?:index|working directory))$", re.M)
_LACKING = re.compile(r"^error: sha1 information is lacking or useless \((?P<path>.+)\)\.$", re.M)
_CONFLICT = re.compile(r"^CONFLICT \(content\): Merge conflict in (?P<path>.+)$", re.M)
_DELETED = re.compile(r"^CONFLICT \([^)]*\): (?P<path>.+?) deleted in ", re.M)
_FAILED_AT = re.compile(r"^Patch failed at (?P<num>\d+) (?P<subject>.*)$", re.M)
_MARKER = re.compile(rb"^(?:<{7}|>{7})(?: |$)", re.M)
_FELL_BACK = "Falling back to patching base and 3-way merge"
_AUTO_MERGING = re.compile(r"^Auto-merging (?P<path>.+)$", re.M)
_BASE_ENTRY = re.compile(r"^[AMD]\t(?P<path>.+)$", re.M)
MAX_CARRIER_COMMITS = 100  # a PR with more commits is not read for the change


@dataclass
class ApplyResult:
    """Outcome of applying (or continuing) a patch series in a worktree."""

    status: Status
    head: str
    conflicts: list[str] = field(default_factory=list)
    message: str = ""
    merged: list[str] = field(default_factory=list)  # went in by a 3-way merge: needs a look
    context_ignored: list[str] = field(default_factory=list)


def _rebase_apply(wt: Worktree) -> Path:  # where `git am` keeps its state
    return wt.own_dir / "rebase-apply"


def am_in_progress(wt: Worktree) -> bool:
    """True when ``git am`` stopped in this worktree and waits for continue or abort."""
    return (_rebase_apply(wt) / "applying").is_file()


def refuse_in_progress(wt: Worktree) -> None:
    if am_in_progress(wt):
        raise BackportError("conflict", f"a git am is already in progress in {wt.path}; run "
                                        "continue or abort first.")


def file_lines(data: bytes) -> list[str]:
    """A file's lines as the patch reader sees them: no line ends, no trailing CR."""
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def committer_env(wt: Worktree, author: tuple[str, str] | None) -> dict[str, str]:
    """GIT_COMMITTER_NAME/EMAIL from ``author`` where git has no identity configured."""
    if author is None:
        return {}
    name, mail = author
    env = {}
    identity = wt.memo.once("identity", lambda: {  # which of user.name/email git has a value for
        key.lower() for key, _, value in (line.partition(" ") for line in wt.git(
            ["config", "--get-regexp", r"^user\.(name|email)$"], check=False).stdout.splitlines())
        if value.strip()})
    if "GIT_COMMITTER_NAME" not in os.environ and "user.name" not in identity:
        env["GIT_COMMITTER_NAME"] = name
    if not any(k in os.environ for k in ("GIT_COMMITTER_EMAIL", "EMAIL")) and (
            "user.email" not in identity):
        env["GIT_COMMITTER_EMAIL"] = mail
        env.setdefault("GIT_COMMITTER_NAME", name)
    return env


def _unmerged(wt: Worktree) -> list[str]:  # the files git marks as conflicted
    out = wt.git(["-c", "core.quotepath=false", "diff", "--name-only", "--diff-filter=U"])
    return [line for line in out.stdout.splitlines() if line]


def has_markers(path: Path) -> bool:
    """True when ``path`` holds a line that opens or closes a conflict region."""
    try:
        return bool(_MARKER.search(path.read_bytes()))
    except OSError:
        return False


def snapshot(wt: Worktree, paths: Sequence[str]) -> dict[str, str | None]:
    """Blob id of each file as it is in the worktree now (None when absent)."""
    return {path: wt.git(["hash-object", "--no-filters", "--", path]).stdout.strip()
            if (wt.path / path).is_file() else None for path in paths}


def _current_patch_name(wt: Worktree, out: GitOutput, names: Sequence[str] | None) -> str:
    """The file name (or number and subject) of the patch ``git am`` stopped at."""
    number = None
    with contextlib.suppress(OSError, ValueError):
        number = int((_rebase_apply(wt) / "next").read_text().strip())
    match = _FAILED_AT.search(out.text)
    if number is None and match:
        number = int(match.group("num"))
    if names and number is not None and 1 <= number <= len(names):
        return names[number - 1]
    if match:
        return f"{match.group('num')} ({match.group('subject').strip()})"
    return f"{number:04d}" if number is not None else "(unknown)"


def _conflict_result(wt: Worktree, out: GitOutput, names: Sequence[str] | None) -> ApplyResult:
    """Describe where ``git am`` stopped; the am session is left in progress for the user."""
    named = [m.group("path") for rx in (_CONFLICT, _DELETED, _PATCH_FAILED, _NOT_APPLY, _LACKING)
             for m in rx.finditer(out.text)]
    conflicts = list(dict.fromkeys(_unmerged(wt) + named))
    name = _current_patch_name(wt, out, names)
    why = (f"conflict in {', '.join(conflicts)}" if conflicts
           else out.reason)
    message = redact(f"patch {name} does not apply: {why}")
    return ApplyResult("conflict", wt.head(), conflicts, message)


def _prefetch_preimages(wt: Worktree, patches: Sequence[Patch]) -> None:
    """Make the pre-image blobs local for the 3-way fallback (an abbreviated id by its full one)."""
    memo = wt.memo
    missing: dict[str, str] = {}
    for patch in patches:
        for path, blob in patch.preimages.items():
            if blob in missing or memo.has(blob) or memo.absent(blob):
                continue
            if wt.git(["rev-parse", "--verify", "--quiet", f"{blob}^{{blob}}"], check=False).ok:
                memo.searched([blob], [])
            else:
                missing[blob] = path
    paths = sorted({path for blob, path in missing.items() if len(blob) not in (40, 64)})
    log = wt.git(["-c", "core.quotepath=false", "log", "--all", "--format=", "--raw",
                  "--no-abbrev", "--no-renames", "--", *paths], check=False) if paths else None
    oids = {oid for line in (log.stdout.splitlines() if log else []) if line.startswith(":")
            for oid in line.split()[2:4]}
    matches = {b: {b} if len(b) in (40, 64) else {o for o in oids if o.startswith(b)}
               for b in missing}
    fetched = {oid for oid in sorted(set().union(*matches.values()))
               if wt.git(["cat-file", "-e", oid], check=False).ok}
    memo.searched([b for b in missing if matches[b] & fetched],
                  [b for b in missing if not matches[b] & fetched])


def mailbox(patches: Sequence[Patch]) -> bytes:
    """The patches' bytes as one mailbox, each ending with a newline."""
    return b"".join(p.data if p.data.endswith(b"\n") else p.data + b"\n" for p in patches)


def apply_series(wt: Worktree, patches: Sequence[Patch], *, base: str | None = None) -> ApplyResult:
    """Apply ``patches`` with ``git am -3``, skipping an empty one; ``base``: HEAD if known."""
    if not patches:
        raise BackportError("usage", "no patch files to apply.")
    refuse_in_progress(wt)
    base = base or wt.head()
    names = [p.path.name for p in patches]
    run_env = committer_env(wt, patches[0].author)
    _prefetch_preimages(wt, patches)
    out = wt.git([*SAFE_CONFIG, "am", "--3way", *AM_OPTIONS], env=run_env,
                 stdin=mailbox(patches), check=False)
    skipped = out.text.count(_ALREADY)
    seen = [out.text]
    while not out.ok and am_in_progress(wt) and "Patch is empty." in out.text:
        skipped += 1
        out = wt.git([*SAFE_CONFIG, "am", "--skip"], env=run_env, check=False)
        seen.append(out.text)
        skipped += out.text.count(_ALREADY)
    if not out.ok:
        if am_in_progress(wt):
            return _conflict_result(wt, out, names)
        raise BackportError("git", redact(f"git am could not apply {names[0]} in {wt.path}: "
                                          f"{out.reason}."))
    made = wt.git(["rev-list", "--topo-order", f"{base}..HEAD"]).stdout.split()  # HEAD first
    if not made:
        return ApplyResult("already-applied", wt.head(), [],
                           f"all {len(patches)} patch(es) already present on {base[:9]}")
    message = f"applied {len(made)} patch(es) on top of {base[:9]}" + (
        f"; {skipped} already present" if skipped else "")
    said = "\n".join(seen)  # the files git says it had to merge
    merged = [m.group("path") for rx in (_AUTO_MERGING, _BASE_ENTRY) for m in rx.finditer(said)]
    return ApplyResult("applied", made[0], [], message,
                       list(dict.fromkeys(merged)) if _FELL_BACK in said else [])


def continue_series(wt: Worktree) -> ApplyResult:
    """Stage the resolved files and ``git am --continue`` (refused while markers remain)."""
    if not am_in_progress(wt):
        raise BackportError("conflict", f"no git am is in progress in {wt.path}; "
                                        "nothing to continue.")
    diff = _rebase_apply(wt) / "patch"  # git am's copy of the patch it stopped on
    touched = list(read_diff(diff.read_bytes().decode("utf-8", "surrogateescape")).paths
                   ) if diff.is_file() else []
    candidates = list(dict.fromkeys(_unmerged(wt) + touched))
    marked = [p for p in candidates if has_markers(wt.path / p)]
    if marked:
        return ApplyResult("conflict", wt.head(), marked,
                           f"conflict markers remain in {', '.join(marked)}")
    tracked = set(wt.git(["-c", "core.quotepath=false", "ls-files", "--", *candidates]
                         ).stdout.splitlines()) if candidates else set()
    stage = [p for p in candidates if (wt.path / p).exists() or p in tracked]
    if stage:
        wt.git(["add", "--sparse", "-A", "--", *stage])
    before = wt.head()
    info = _rebase_apply(wt) / "info"  # the author of the patch git am stopped at
    fields = dict(line.split(": ", 1) for line in (info.read_text("utf-8", "replace")
                  if info.is_file() else "").splitlines() if ": " in line)
    author = (fields.get("Author", fields["Email"]), fields["Email"]) if "Email" in fields else None
    out = wt.git([*SAFE_CONFIG, "am", "--continue", "--committer-date-is-author-date"],
                 env=committer_env(wt, author), check=False)
    if out.ok:
        return ApplyResult("applied", wt.head(), [], f"applied; HEAD was {before[:9]}")
    if am_in_progress(wt):
        if "No changes" in out.text:
            name = _current_patch_name(wt, out, None)
            return ApplyResult("conflict", wt.head(), candidates, f"patch {name} leaves no "
                               "change after the resolution; stage the fix or run abort")
        return _conflict_result(wt, out, None)
    raise BackportError("git", redact(f"git am --continue failed in {wt.path}: {out.reason}."))


def abort_series(wt: Worktree) -> None:
    """Give up the ``git am`` in progress (if any); HEAD returns to where it started."""
    if am_in_progress(wt):
        wt.git(["am", "--abort"])


def commit_patch_ids(cwd: Path, diff: bytes,
                     env: Mapping[str, str] | None = None) -> dict[str, str]:
    """commit -> patch-id of each change in ``diff`` (``log -p --format='commit %H'`` output)."""
    out = git(["patch-id", "--stable"], cwd=cwd, env=env, stdin=diff)
    return {parts[1]: parts[0] for parts in (line.split() for line in out.stdout.splitlines())
            if len(parts) == 2}


def patch_ids(cwd: Path, diff: bytes, env: Mapping[str, str] | None = None,
              memo: RunMemo | None = None) -> set[str]:
    """The patch-ids of the changes in ``diff``; ``memo`` keeps them for the run."""
    if memo is not None:
        return set(memo.once(("patch-ids", diff), lambda: frozenset(patch_ids(cwd, diff, env))))
    return set(commit_patch_ids(cwd, diff, env).values())


def same_change(wanted: Sequence[set[str]], found: set[str]) -> bool:
    """The patch-id rule: every patch of a change (``wanted``) has an id among ``found``."""
    return bool(wanted) and all(ids and ids & found for ids in wanted)


def already_applied(cache: RepoCache, base_sha: str, patches: Sequence[Patch]) -> bool:
    """True when every patch's patch-id is that of a commit touching its paths in ``base_sha``."""
    if not re.fullmatch(r"[0-9a-f]{7,64}", base_sha or ""):
        raise BackportError("usage", f"invalid base commit {base_sha!r}.")
    wanted = [(ids, set(p.paths)) for p in patches
              if (ids := patch_ids(cache.path, p.data, memo=cache.memo)) and p.paths]
    if not wanted:
        return False
    all_paths = sorted(set().union(*(paths for _, paths in wanted)))
    log = git(["-c", "core.quotepath=false", "log", "--no-merges", "--full-diff", "--name-only",
               "--no-renames", "--format=%x01%H", base_sha, "--", *all_paths], cwd=cache.path)
    touched = {sha.strip(): {f for f in files if f} for sha, *files in
               (record.split("\n") for record in log.stdout.split("\x01")[1:])}
    found: set[str] = set()
    for ids, paths in wanted:
        candidates = [c for c, files in touched.items() if files == paths]
        if candidates:
            show = git(["show", "--no-color", "--no-ext-diff", "--format=commit %H",
                        *candidates, "--"], cwd=cache.path, env=cache.env)
            found |= patch_ids(cache.path, show.raw)
        if not ids <= found:
            return False
    return True


def carries_change(cache: RepoCache, number: int, base: str, patches: Sequence[bytes]) -> bool:
    """Whether PR ``number``'s own commits, or their sum, have the patch-ids of ``patches``
    (format-patch bytes); an unfetchable PR or one over ``MAX_CARRIER_COMMITS`` does not."""
    wanted = [patch_ids(cache.path, data, cache.env) for data in patches]
    if not wanted or not all(wanted):
        return False
    from backport.git.source_pr import open_commits  # only a run that found a carrier PR

    try:
        commits = open_commits(cache, base, number).rev
    except BackportError:  # not fetched, or no commit of its own
        return False
    count = git(["rev-list", "--count", commits, "--"], cwd=cache.path).stdout.strip()
    if not count.isdigit() or int(count) > MAX_CARRIER_COMMITS:
        return False
    each = git(["log", "-p", "--no-color", "--no-ext-diff", "--format=commit %H", commits, "--"],
               cwd=cache.path, env=cache.env)
    whole = git(["diff", "--no-color", "--no-ext-diff", commits, "--"], cwd=cache.path,
                env=cache.env)
    found = patch_ids(cache.path, each.raw, cache.env) | patch_ids(cache.path, whole.raw, cache.env)
    return same_change(wanted, found)


def series_tree(repo: Path, base: str, patches: Sequence[Patch], *,
                urls: Sequence[str] = ()) -> str | None:
    """The tree ``patches`` make on ``base`` from ``repo``'s objects alone, or None, in a new
    index of a private folder (sealed `token_git`): what publish compares the tested commit with."""
    with tempfile.TemporaryDirectory(prefix="backport-fresh-", dir=repo) as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        token_git(["read-tree", base], repo=repo, urls=urls, env=env)
        for patch in patches:
            if not token_git(["apply", "--cached", "--3way", "-"], repo=repo, urls=urls, env=env,
                             stdin=patch.data, check=False).ok:
                return None
        tree = token_git(["write-tree"], repo=repo, urls=urls, env=env, check=False)
        return tree.stdout.strip() if tree.ok else None  # fails on a conflict left


def commit_tree(repo: Path, commit: str, *, urls: Sequence[str] = ()) -> str:
    """The tree of ``commit`` in the git folder ``repo`` (sealed, as `series_tree`)."""
    return token_git(["rev-parse", f"{commit}^{{tree}}"], repo=repo, urls=urls).stdout.strip()
