"""One bare, blobless cache repository per upstream URL; only the needed heads are fetched."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from backport.errors import BackportError
from backport.git.known import Known
from backport.git.locks import file_lock
from backport.git.run import (
    GitOutput,
    check_branch_name,
    first_error_line,
    git,
    is_unreachable,
    token_git,
    transport_url,
)
from backport.redact import redact, strip_url_credentials

REMOTE = "upstream"
TRACKING = f"refs/remotes/{REMOTE}/"
_MISSING_REF = re.compile(r"couldn't find remote ref refs/heads/(?P<branch>\S+)")
# What git says when the upstream cannot send an object its branches need.
_LACKING = ("possible repository corruption on the remote side",
            "did not send all necessary objects", "missing blob object")
_UNREADABLE = re.compile(r"(?:unable to read|missing blob object) '?(?P<sha>[0-9a-f]{40,64})")

# In-process side of the cache lock: re-entrant per thread, shared by every RepoCache
# instance of the same repository; the flock below it keeps other processes out.
_guard = threading.Lock()
_path_locks: dict[Path, tuple[threading.RLock, list[int]]] = {}


def lock_file(repo: Path) -> Path:
    """The file whose flock guards the cache repository at ``repo``: ``<repo>.lock`` beside it."""
    real = Path(os.path.realpath(repo))
    return real.with_name(real.name + ".lock")


@contextlib.contextmanager
def repo_lock(repo: Path) -> Iterator[None]:
    """Exclusive use of the cache repository at ``repo`` (re-entrant within one thread): its
    refs, its worktree registry; other processes are kept out by the flock on its lock file."""
    repo = Path(os.path.realpath(repo))
    with _guard:
        rlock, depth = _path_locks.setdefault(repo, (threading.RLock(), [0]))
    with rlock:
        if depth[0]:
            depth[0] += 1
            try:
                yield
            finally:
                depth[0] -= 1
            return
        with file_lock(lock_file(repo), wait=True):
            depth[0] = 1
            try:
                yield
            finally:
                depth[0] = 0


def cache_dir_name(url: str) -> str:
    """``<host-and-path>-<hash>``: readable, filesystem-safe and unique per upstream URL."""
    clean = strip_url_credentials(transport_url(url))
    readable = re.sub(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", "", clean)
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", readable).strip("-.")
    if readable.endswith(".git"):
        readable = readable[: -len(".git")]
    readable = readable[-60:].strip("-.") or "repo"
    digest = hashlib.sha256(clean.encode("utf-8")).hexdigest()[:10]
    return f"{readable}-{digest}"


def lacks_objects(text: str) -> bool:
    """True when git's output says the upstream lacks objects a fetch needs."""
    low = text.lower()
    return any(marker in low for marker in _LACKING)


def _lacking_said(text: str) -> str:
    """git's line saying the upstream lacks objects (without its prefixes and the terminal's
    escapes), and the object it could not read where git names it."""
    plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x09\x0b-\x1f\x7f]", "", text)
    line = next(line for line in plain.splitlines() if lacks_objects(line))
    said = re.sub(r"^\s*((remote|fatal|error):\s*)+", "", line).strip().rstrip(".")
    missing = _UNREADABLE.search(plain)
    return f"{said}: it has no object {missing.group('sha')}" if missing else said


class RepoCache:
    """A bare repository holding the upstream's needed branches under ``refs/remotes/upstream``.

    ``env`` (e.g. ``GIT_ASKPASS``) is passed to every call that talks to the upstream;
    ``known`` is what this run (one instance) learned from the repository (`git/known.py`).
    """

    def __init__(
        self, root: Path, upstream_url: str, *, env: Mapping[str, str] | None = None
    ) -> None:
        self.root = Path(root).expanduser().absolute()
        self.upstream_url = upstream_url
        self.url = strip_url_credentials(transport_url(upstream_url))
        self.path = self.root / cache_dir_name(upstream_url)
        self.lock_path = lock_file(self.path)
        self.env = dict(env or {})
        self.known = Known()

    # -- locking ---------------------------------------------------------------------------
    def lock(self) -> contextlib.AbstractContextManager[None]:
        """Exclusive use of the cache repository (re-entrant within one thread)."""
        return repo_lock(self.path)

    # -- setup -----------------------------------------------------------------------------
    def ensure(self) -> None:
        """Create the bare repository with remote ``upstream`` if it is not there yet (asked
        of git once per instance while the repository stays: its remote and whether fetches
        go without a filter, `nofilter`, in one read; none for a repository made here)."""
        with self.lock():
            if self.known.ensured and (self.path / "HEAD").is_file():
                return
            if not (self.path / "HEAD").is_file():
                self.path.mkdir(parents=True, exist_ok=True)
                git(["init", "--quiet", "--bare", "--", str(self.path)], cwd=self.root)
                current, self.known.nofilter = "", False
            else:
                current, self.known.nofilter = self._read_setup()
            if current != self.url:
                git(["config", "--", f"remote.{REMOTE}.url", self.url], cwd=self.path)
                git(["config", "--", f"remote.{REMOTE}.tagOpt", "--no-tags"], cwd=self.path)
            self.known.ensured = True

    def _read_setup(self) -> tuple[str, bool]:
        """The remote's URL and whether ``backport.nofilter`` is true, in one git process."""
        out = git(["config", "--null", "--get-regexp",
                   rf"^(remote\.{REMOTE}\.url|backport\.nofilter)$"], cwd=self.path, check=False)
        values = dict(item.partition("\n")[::2] for item in out.stdout.split("\0") if item)
        return (values.get(f"remote.{REMOTE}.url", "").strip(),
                values.get("backport.nofilter", "").strip() == "true")

    @property
    def blobless(self) -> bool:
        """True when the cache is a partial clone that fetches blobs lazily."""
        out = git(
            ["config", "--get", f"remote.{REMOTE}.partialclonefilter"], cwd=self.path, check=False
        )
        nofilter = git(["config", "--get", "backport.nofilter"], cwd=self.path, check=False)
        return out.ok and nofilter.stdout.strip() != "true"

    # -- network ---------------------------------------------------------------------------
    def fetch(self, branches: Sequence[str]) -> dict[str, str]:
        """Fetch exactly ``refs/heads/<B>`` for each branch; return branch -> upstream head sha."""
        names = list(dict.fromkeys(branches))
        for name in names:
            check_branch_name(name)
        if not names:
            return {}
        refspecs = [f"+refs/heads/{b}:{TRACKING}{b}" for b in names]
        with self.lock():
            made = not (self.path / "HEAD").is_file()
            self.ensure()
            config = (self.path / "config").read_bytes()
            out = self._fetch_heads(refspecs)
            if not out.ok:  # the cache stays as it was: a new one goes, an old one's settings stay
                self._undo(made, config)
                raise self._fetch_error(out)
            self.known.fetched()
            return self.local_heads(names)

    def _fetch_heads(self, refspecs: list[str]) -> GitOutput:
        """Fetch ``refspecs`` blobless, or whole from a server that cannot filter (remembered
        in ``backport.nofilter`` once such a fetch succeeded)."""
        base = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head"]
        if self.known.nofilter:
            return self._fetch([*base, "--no-filter"], refspecs)
        out = self._fetch([*base, "--filter=blob:none"], refspecs)
        if (out.ok or "filter" not in out.stderr.lower() or is_unreachable(out.text)
                or lacks_objects(out.text)):
            return out
        out = self._fetch([*base, "--no-filter"], refspecs)
        if out.ok:
            git(["config", "backport.nofilter", "true"], cwd=self.path)
            self.known.nofilter = True
        return out

    def _undo(self, made: bool, config: bytes) -> None:
        """Leave the cache as it was before a fetch that failed: a repository made for it
        removed, an existing one's settings (git writes the partial-clone ones) restored."""
        if made:
            shutil.rmtree(self.path, ignore_errors=True)
            self.known.ensured = False
        elif (self.path / "config").read_bytes() != config:
            (self.path / "config").write_bytes(config)

    def _fetch(self, args: list[str], refspecs: list[str]) -> GitOutput:
        """One fetch from the upstream, sealed (`token_git`): it may run in a step that holds
        the token, after a test."""
        return token_git([*args, "--", REMOTE, *refspecs], repo=self.path, urls=(self.url,),
                         env=self.env, check=False)

    def _fetch_error(self, out: GitOutput) -> BackportError:
        url = redact(self.upstream_url)
        missing = _MISSING_REF.search(out.text)
        if missing:
            branch = missing.group("branch")
            return BackportError(
                "branch-missing", f"target branch '{branch}' does not exist in {url}."
            )
        if lacks_objects(out.text):
            return BackportError(
                "git", f"the upstream {url} lacks objects its branches need "
                       f"({redact(_lacking_said(out.text))}), as a copy without some of its "
                       f"files does: use a full clone of it instead (`git clone --mirror`); "
                       f"the cache is left as it was.")
        reason = redact(first_error_line(out.text).rstrip("."))
        if is_unreachable(out.text):
            return BackportError("upstream-unreachable", f"cannot reach upstream {url}: {reason}.")
        return BackportError("git", f"fetching from {url} failed: {reason}.")

    def local_heads(self, branches: Sequence[str]) -> dict[str, str]:
        """branch -> sha of ``refs/remotes/upstream/<branch>`` as last fetched (one
        ``git cat-file --batch-check`` for them all)."""
        names = list(dict.fromkeys(branches))
        asked = [b for b in names if b.strip() and "\n" not in b]  # one line each
        out = git(["cat-file", "--batch-check=%(objectname) %(objecttype)"], cwd=self.path,
                  check=False, stdin="".join(f"{TRACKING}{b}^{{commit}}\n" for b in asked
                                             ).encode("utf-8", "surrogateescape")) if asked else None
        lines = dict(zip(asked, out.stdout.splitlines() if out and out.ok else [], strict=False))
        heads: dict[str, str] = {}
        for branch in names:
            sha, _, kind = lines.get(branch, "").partition(" ")
            if kind != "commit":
                raise BackportError(
                    "branch-missing",
                    f"target branch '{branch}' has not been fetched from "
                    f"{redact(self.upstream_url)}.",
                )
            heads[branch] = sha
        return heads

    def remote_heads(self, branches: Sequence[str]) -> dict[str, str | None]:
        """branch -> current upstream sha (None when absent), by ``ls-remote``; fetches nothing."""
        names = list(dict.fromkeys(branches))
        for name in names:
            check_branch_name(name)
        heads: dict[str, str | None] = dict.fromkeys(names)
        if not names:
            return heads
        out = token_git(
            ["ls-remote", "--heads", "--", self.url, *(f"refs/heads/{b}" for b in names)],
            repo=None, urls=(self.url,), env=self.env, check=False)
        if not out.ok:
            url = redact(self.upstream_url)
            reason = redact(first_error_line(out.text).rstrip("."))
            code = "upstream-unreachable" if is_unreachable(out.text) else "git"
            raise BackportError(code, f"cannot list branches of upstream {url}: {reason}.")
        for line in out.stdout.splitlines():
            sha, _, ref = line.partition("\t")
            branch = ref.strip().removeprefix("refs/heads/")
            if branch in heads and ref.strip() == f"refs/heads/{branch}":
                heads[branch] = sha.strip()
        return heads
