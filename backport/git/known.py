"""What one run learned from its cache repository, so that it does not start git to ask again.

A `RepoCache` holds one (a run opens its cache once) and hands it to the worktrees it makes.
What it keeps stays true for the run: blobs read by a name that named them (an object id, or
``<commit>:<path>``: the same name gives the same bytes), the patch-ids of a patch's bytes,
the committer identity git is configured with, the pre-image blobs searched for since the
last fetch. A miss (a blob not there yet) is asked of git again, unless a search since the
last fetch found that the history lacks it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from backport.git.run import git

_MAX_BLOB = 8 << 20  # bytes: a larger blob is read again when asked again
_MAX_TOTAL = 128 << 20  # bytes kept in all
# Names that always name the same object: a full id (of a blob, or of a commit with a path in
# its tree) or an abbreviated blob id, as a patch's index line gives one. A ref name moves.
_FIXED = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})(?::.+)?|[0-9a-f]{7,39}", re.S)


class Known:
    """A run's memo of git answers that cannot change during the run (thread-safe: the
    branches of a run share it; two threads asking at once both ask git, which is harmless)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blobs: dict[str, bytes] = {}
        self._size = 0
        self._ids: dict[bytes, frozenset[str]] = {}
        self._identity: dict[str, str] | None = None
        self._fetches = 0  # fetches so far; a search holds until the next one
        self._absent: dict[str, int] = {}  # blob a search missed -> fetches then
        self._present: set[str] = set()  # blob names that name a blob in the repository
        self.ensured = False  # the cache repository exists with its remote set
        self.nofilter = False  # its fetches go without a filter (`backport.nofilter`), as read
        self.pruned = False  # the stale worktrees of the cache were pruned this run

    # -- blobs ---------------------------------------------------------------------------------
    def blob(self, repo: Path, name: str) -> bytes | None:
        """The bytes ``name`` (a blob id or ``<commit>:<path>``) names in ``repo``; None when it
        names no blob there (asked again next time, unless a search found it `absent`)."""
        if name in self._blobs:
            return self._blobs[name]
        if self.absent(name):
            return None
        out = git(["cat-file", "blob", name], cwd=repo, check=False)
        if not out.ok:
            return None
        if _FIXED.fullmatch(name):
            self.keep(name, out.raw)
        return out.raw

    def has(self, name: str) -> bool:
        """True when ``name`` is known to name a blob in the repository."""
        return name in self._blobs or name in self._present

    def keep(self, name: str, data: bytes) -> None:
        """Remember that ``name`` (one `_FIXED` matches) names ``data``."""
        with self._lock:
            self._present.add(name)
            if name in self._blobs or len(data) > _MAX_BLOB or self._size + len(data) > _MAX_TOTAL:
                return
            self._blobs[name] = data
            self._size += len(data)

    def reader(self, repo: Path) -> Blobs:
        """``repo``'s blobs as the readers of `git/present.py` take them (``get(name)``)."""
        return Blobs(self, repo)

    # -- pre-image searches --------------------------------------------------------------------
    def fetched(self) -> None:
        """The cache fetched: the history may now hold what an earlier search missed."""
        with self._lock:
            self._fetches += 1

    def searched(self, found: Iterable[str], missed: Iterable[str]) -> None:
        """A search of the whole history found (and fetched) the blobs ``found`` and not the
        blobs ``missed``."""
        with self._lock:
            self._present.update(found)
            for name in missed:
                self._absent[name] = self._fetches

    def absent(self, name: str) -> bool:
        """True when a search since the last fetch did not find blob ``name``."""
        return self._absent.get(name) == self._fetches

    # -- patch-ids and identity ----------------------------------------------------------------
    def patch_ids(self, diff: bytes, compute: Callable[[], set[str]]) -> set[str]:
        """The patch-ids of ``diff``: ``compute()`` the first time (they depend on its bytes
        alone)."""
        found = self._ids.get(diff)
        if found is None:
            found = frozenset(compute())
            with self._lock:
                self._ids[diff] = found
        return set(found)

    def identity(self, read: Callable[[], Mapping[str, str]]) -> Mapping[str, str]:
        """``user.name`` / ``user.email`` as git is configured: ``read()`` the first time."""
        if self._identity is None:
            self._identity = dict(read())
        return self._identity


class Blobs:
    """A repository's blobs by name, read through a run's `Known` (``get`` as a dict's)."""

    def __init__(self, known: Known, repo: Path) -> None:
        self.known, self.repo = known, repo

    def get(self, name: str) -> bytes | None:
        return self.known.blob(self.repo, name)
