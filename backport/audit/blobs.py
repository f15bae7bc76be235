"""The blobs the audit reads, and those it cannot: in a blobless cache a step's blobs are
fetched in one request first (not one by one as git reads them); a blob the upstream does not
serve is named, with why, instead of failing the step. Whether a change applies on a target
reads only the target's blobs its patch touches, in a temporary index holding just those paths."""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from backport.audit.history import log_of
from backport.git.cache import REMOTE, RepoCache
from backport.git.run import git
from backport.redact import redact

_REFUSED = re.compile(r"not our ref ([0-9a-f]{40})")
_FAILED = re.compile(r"could not fetch|promisor remote|unable to read|missing blob|bad object",
                     re.IGNORECASE)
GITLINK = "160000"  # a submodule's commit: no blob of this repository


def present(repo: Path, oids: Iterable[str]) -> set[str]:
    """Those of ``oids`` the repository holds now (asked without fetching a missing one)."""
    wanted = sorted(set(oids))
    if not wanted:
        return set()
    out = git(["rev-list", "--objects", "--no-walk", "--missing=print", "--ignore-missing",
               "--stdin"], cwd=repo, stdin="".join(f"{o}\n" for o in wanted).encode(),
              check=False, timeout=3600)
    return {line.split()[0] for line in out.stdout.splitlines() if line[:1] not in ("", "?")}


def fetch(repo: Path, oids: Iterable[str], env: Mapping[str, str]) -> dict[str, str]:
    """Fetch those of ``oids`` the repository lacks, in one request; blob -> why for each the
    upstream did not give (one it lacks is left out and the rest asked again)."""
    todo = sorted(set(oids) - present(repo, oids))
    unreadable: dict[str, str] = {}
    while todo:
        out = git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                   "--recurse-submodules=no", "--filter=blob:none", "--stdin", REMOTE],
                  cwd=repo, env=dict(env), stdin="".join(f"{o}\n" for o in todo).encode(),
                  check=False, timeout=3600)
        if out.ok:
            break
        refused = _REFUSED.search(out.stderr)
        if refused is None or refused.group(1) not in todo:
            why = _last_line(out.stderr) or f"git fetch exited {out.status}"
            unreadable.update(dict.fromkeys(todo, f"the fetch failed: {redact(why)}"))
            break
        unreadable[refused.group(1)] = "the upstream does not have it"
        todo.remove(refused.group(1))
    return unreadable


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("fatal: ") if lines else ""


def changed(repo: Path, commits: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """commit -> (path, blob) of each blob its diff against its first parent reads (the
    before and after of every file it changes, not a submodule's commit; trees only)."""
    _, raw = log_of(repo, commits, "--raw", "--no-abbrev", "--format=commit %H")
    found: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        if line.startswith("commit "):
            current = found.setdefault(line[7:].strip(), [])
        elif line.startswith(":") and "\t" in line:
            meta, _, path = line.partition("\t")
            modes, oids = meta[1:].split()[0:2], meta.split()[2:4]
            current.extend((path, oid) for mode, oid in zip(modes, oids, strict=True)
                           if oid.strip("0") and mode != GITLINK)
    return found


def read_or_why(cache: RepoCache, oids: set[str], known: dict[str, str]) -> None:
    """Those of ``oids`` not in ``known`` (blob -> why it cannot be read) fetched in one request
    in a blobless cache, else those missing named so."""
    if cache.blobless:
        known.update(fetch(cache.path, oids - set(known), cache.env))
    else:
        missing = oids - present(cache.path, oids)
        known.update(dict.fromkeys(missing - set(known), "not in the repository"))


def unreadable_commits(cache: RepoCache, commits: Sequence[str],
                       known: dict[str, str]) -> dict[str, str]:
    """Fetch the blobs ``commits`` read; commit -> why for each whose patch cannot be made.
    ``known`` (blob -> why) makes a refused blob asked for once."""
    blobs = changed(cache.path, commits)
    read_or_why(cache, {oid for pairs in blobs.values() for _, oid in pairs}, known)
    return {commit: f"its blob {oid[:9]} of {path} could not be read: {known[oid]}"
            for commit, pairs in blobs.items()
            for path, oid in reversed(pairs) if oid in known}


def applies(repo: Path, entries: Mapping[str, tuple[str, str]],
            patches: Sequence[tuple[str, Sequence[str], bytes]],
            stop: threading.Event | None = None) -> dict[str, bool | str]:
    """commit -> whether its patch goes in on a target (tree ``entries``) as ``git am -3`` would,
    for each (commit, touched paths, format-patch email); git's reason where a blob is lacking.
    The index holds only the touched paths; no check starts once ``stop`` is set."""
    touched = sorted({p for _, paths, _ in patches for p in paths if p in entries})
    with tempfile.TemporaryDirectory(prefix="backport-audit-") as tmp:
        pristine, index = Path(tmp) / "base", Path(tmp) / "index"
        listing = "".join(f"{entries[p][0]} {entries[p][1]}\t{p}\n" for p in touched)
        made = {"GIT_INDEX_FILE": str(pristine)}
        git(["update-index", "--index-info"] if touched else ["read-tree", "--empty"],
            cwd=repo, env=made, stdin=listing.encode("utf-8", "surrogateescape"))
        env = {"GIT_INDEX_FILE": str(index)}
        found: dict[str, bool | str] = {}
        for commit, _, email in patches:
            if stop is not None and stop.is_set():
                break
            shutil.copyfile(pristine, index)
            out = git(["apply", "--cached", "--3way", "-"], cwd=repo, env=env, stdin=email,
                      check=False)
            failed = not out.ok and _FAILED.search(out.stderr)
            found[commit] = f"git could not read a blob: {_last_line(out.stderr)}" if failed \
                else out.ok
        return found
