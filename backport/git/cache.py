"""The cache repository: one bare, blobless repository per upstream URL holding only the heads
fetched (``refs/remotes/upstream/``), shared by every folder and run on the host under one lock
(``<repo>.lock``, :func:`file_lock`, which the run locks use too); what a run learned from it
(:class:`RunMemo`); and the fork's branches read and moved (``ls-remote``, ``push
--force-with-lease``), sealed like the fetch: the token only in the askpass environment."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import re
import shutil
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from backport.errors import BackportError, ErrorCode, ForkDiverged
from backport.git.run import (
    GitOutput,
    check_branch_name,
    git,
    is_unreachable,
    ls_remote,
    read_blob,
    remote_failure,
    token_git,
    transport_url,
)
from backport.redact import redact, strip_url_credentials

T = TypeVar("T")
REMOTE = "upstream"
TRACKING = f"refs/remotes/{REMOTE}/"
_MISSING_REF = re.compile(r"couldn't find remote ref refs/heads/(?P<branch>\S+)")
# What git says when the upstream cannot send an object its branches need.
_LACKING = ("possible repository corruption on the remote side",
            "did not send all necessary objects", "missing blob object")
_UNREADABLE = re.compile(r"(?:unable to read|missing blob object) '?(?P<sha>[0-9a-f]{40,64})")
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_LEASE_FAILED = ("stale info", "fetch first", "non-fast-forward", "[rejected]")
_NOISE = ("failed to push some refs", "could not read from remote repository")
_MAX_BLOB, _MAX_KEPT = 8 << 20, 128 << 20  # bytes: the largest blob kept, all blobs kept
# Names that always name the same object: a full id (with a path) or an abbreviated blob id.
_FIXED = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})(?::.+)?|[0-9a-f]{7,39}", re.S)

# The in-process side of the cache lock (per repository); the flock keeps other processes out.
_guard = threading.Lock()
_path_locks: dict[Path, tuple[threading.RLock, list[int]]] = {}


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool = True,
              on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (made 0600). Held elsewhere: with ``wait`` call
    ``on_wait`` once and block; else ``locked`` naming the file and the holder's pid."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                who = f" by process {pid}" if pid.isdigit() else ""
                raise BackportError(
                    "locked", f"{path} is locked{who}; another backport run is using it."
                ) from None
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def repo_lock(repo: Path) -> Iterator[None]:
    """Exclusive use of the cache repository (its refs, its worktrees), re-entrant per thread."""
    repo = Path(os.path.realpath(repo))
    with _guard:
        rlock, depth = _path_locks.setdefault(repo, (threading.RLock(), [0]))
    with rlock, contextlib.ExitStack() as held:
        if not depth[0]:
            held.enter_context(file_lock(repo.with_name(repo.name + ".lock")))
        depth[0] += 1
        try:
            yield
        finally:
            depth[0] -= 1


class RunMemo:
    """What a run learned from its cache: blobs by a fixed name, answers by key (patch-ids,
    identity), pre-images a search missed (until the next fetch). Shared by its worktrees."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blobs: dict[str, bytes] = {}
        self._size = 0
        self._answers: dict[Hashable, Any] = {}
        self._fetches = 0  # a search's miss holds until the next fetch
        self._absent: dict[str, int] = {}  # blob a search missed -> fetches then
        self._blob_names: set[str] = set()  # names known to name a blob
        self.ensured = False  # the repository exists with its remote set
        self.nofilter = False  # `backport.nofilter` as read: fetch without a filter
        self.pruned = False  # stale worktrees pruned this run

    def blob(self, repo: Path, name: str) -> bytes | None:
        """The bytes ``name`` (a blob id or ``<commit>:<path>``) names in ``repo``, or None."""
        if name in self._blobs:
            return self._blobs[name]
        data = None if self.absent(name) else read_blob(repo, name)
        if data is not None and _FIXED.fullmatch(name):
            self.keep(name, data)
        return data

    def has(self, name: str) -> bool:
        return name in self._blobs or name in self._blob_names

    def keep(self, name: str, data: bytes) -> None:
        """Remember that ``name`` (a fixed name) names ``data``."""
        with self._lock:
            self._blob_names.add(name)
            if name in self._blobs or len(data) > _MAX_BLOB or self._size + len(data) > _MAX_KEPT:
                return
            self._blobs[name] = data
            self._size += len(data)

    def reader(self, repo: Path) -> Callable[[str], bytes | None]:
        """``repo``'s blobs by name, read through this memo."""
        return functools.partial(self.blob, repo)

    def fetched(self) -> None:
        """The history may now hold what an earlier search missed."""
        with self._lock:
            self._fetches += 1

    def searched(self, found: Iterable[str], missed: Iterable[str]) -> None:
        """A search of the history found (and fetched) ``found``, not ``missed``."""
        with self._lock:
            self._blob_names.update(found)
            for name in missed:
                self._absent[name] = self._fetches

    def absent(self, name: str) -> bool:
        """True when a search since the last fetch did not find blob ``name``."""
        return self._absent.get(name) == self._fetches

    def once(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` the first time ``key`` is asked, its first answer after."""
        if key not in self._answers:
            self._answers[key] = compute()
        return self._answers[key]


def cache_dir_name(url: str) -> str:
    """``<host-and-path>-<hash>``: readable, filesystem-safe and unique per upstream URL."""
    clean = strip_url_credentials(transport_url(url))
    readable = re.sub(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", "", clean)
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", readable).strip("-.")
    readable = readable.removesuffix(".git")[-60:].strip("-.") or "repo"
    digest = hashlib.sha256(clean.encode("utf-8")).hexdigest()[:10]
    return f"{readable}-{digest}"


def lacks_objects(text: str) -> bool:
    """True when git's output says the upstream lacks objects a fetch needs."""
    low = text.lower()
    return any(marker in low for marker in _LACKING)


class RepoCache:
    """The cache repository of ``upstream_url``; ``env`` (the askpass) talks to the upstream."""

    def __init__(self, root: Path, upstream_url: str, *,
                 env: Mapping[str, str] | None = None) -> None:
        self.root = Path(root).expanduser().absolute()
        self.upstream_url = upstream_url
        self.url = strip_url_credentials(transport_url(upstream_url))
        self.path = self.root / cache_dir_name(upstream_url)
        self.env = dict(env or {})
        self.memo = RunMemo()

    def ensure(self) -> None:
        """Create the repository with remote ``upstream`` unless there (read once per run)."""
        with repo_lock(self.path):
            if self.memo.ensured and (self.path / "HEAD").is_file():
                return
            if not (self.path / "HEAD").is_file():
                self.path.mkdir(parents=True, exist_ok=True)
                git(["init", "--quiet", "--bare", "--", str(self.path)], cwd=self.root)
                current, self.memo.nofilter = "", False
            else:
                setup = self._read_setup()
                current, self.memo.nofilter = setup.get("url", ""), setup.get("nofilter") == "true"
            if current != self.url:
                git(["config", "--", f"remote.{REMOTE}.url", self.url], cwd=self.path)
                git(["config", "--", f"remote.{REMOTE}.tagOpt", "--no-tags"], cwd=self.path)
            self.memo.ensured = True

    def _read_setup(self) -> dict[str, str]:
        """The remote's ``url`` and ``partialclonefilter``, and ``backport.nofilter``."""
        out = git(["config", "--null", "--get-regexp", rf"^(remote\.{REMOTE}\.(url|"
                   r"partialclonefilter)|backport\.nofilter)$"], cwd=self.path, check=False)
        values = dict(item.partition("\n")[::2] for item in out.stdout.split("\0") if item)
        return {key.rpartition(".")[2]: value.strip() for key, value in values.items()}

    @property
    def blobless(self) -> bool:
        """True when the cache is a partial clone that fetches blobs lazily."""
        setup = self._read_setup()
        return "partialclonefilter" in setup and setup.get("nofilter") != "true"

    def fetch(self, branches: Sequence[str]) -> dict[str, str]:
        """Fetch each branch's head only (branch -> sha), blobless unless the server cannot filter
        (then ``backport.nofilter``); a failure leaves the cache as it was."""
        names = check_branch_name(*branches)
        if not names:
            return {}
        refspecs = [f"+refs/heads/{b}:{TRACKING}{b}" for b in names]
        with repo_lock(self.path):
            made = not (self.path / "HEAD").is_file()
            self.ensure()
            config = (self.path / "config").read_bytes()
            out = self._fetch(refspecs, "--no-filter" if self.memo.nofilter
                              else "--filter=blob:none")
            if not (self.memo.nofilter or out.ok or "filter" not in out.stderr.lower()
                    or is_unreachable(out.text) or lacks_objects(out.text)):
                out = self._fetch(refspecs, "--no-filter")  # a server that cannot filter
                if out.ok:
                    git(["config", "backport.nofilter", "true"], cwd=self.path)
                    self.memo.nofilter = True
            if not out.ok:  # a repository made for it goes, an existing one's settings come back
                if made:
                    shutil.rmtree(self.path, ignore_errors=True)
                    self.memo.ensured = False
                else:
                    (self.path / "config").write_bytes(config)
                raise self._fetch_error(out)
            self.memo.fetched()
            return self.local_heads(names)

    def _fetch(self, refspecs: list[str], blobs: str) -> GitOutput:
        """One fetch from the upstream, sealed (a step holding the token may run it)."""
        return token_git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", blobs, "--",
                          REMOTE, *refspecs], repo=self.path, urls=(self.url,), env=self.env,
                         check=False)

    def _fetch_error(self, out: GitOutput) -> BackportError:
        url = redact(self.upstream_url)
        missing = _MISSING_REF.search(out.text)
        if missing:
            return BackportError("branch-missing", f"target branch '{missing.group('branch')}' "
                                                   f"does not exist in {url}.")
        if lacks_objects(out.text):  # git's line saying so, and the object it names
            plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x09\x0b-\x1f\x7f]", "", out.text)
            line = next(line for line in plain.splitlines() if lacks_objects(line))
            reason = re.sub(r"^\s*((remote|fatal|error):\s*)+", "", line).strip().rstrip(".")
            if missing := _UNREADABLE.search(plain):
                reason = f"{reason}: it has no object {missing.group('sha')}"
            reason = redact(reason)
            return BackportError("git", f"the upstream {url} lacks objects its branches need "
                                        f"({reason}), as a copy without some of its files does: "
                                        f"use a full clone of it instead (`git clone --mirror`); "
                                        f"the cache is left as it was.")
        if is_unreachable(out.text):
            return BackportError("upstream-unreachable",
                                 f"cannot reach upstream {url}: {out.reason}.")
        return BackportError("git", f"fetching from {url} failed: {out.reason}.")

    def local_heads(self, branches: Sequence[str]) -> dict[str, str]:
        """branch -> sha as last fetched, in one ``for-each-ref``."""
        out = git(["for-each-ref", "--format=%(objecttype) %(objectname) %(refname)", TRACKING],
                  cwd=self.path, check=False)
        found = {ref.removeprefix(TRACKING): sha for kind, sha, ref in
                 (line.split(" ", 2) for line in out.stdout.splitlines()) if kind == "commit"}
        for branch in branches:
            if branch not in found:
                raise BackportError("branch-missing", f"target branch '{branch}' has not been "
                                                      f"fetched from {redact(self.upstream_url)}.")
        return {branch: found[branch] for branch in branches}

    def fetch_pr_head(self, number: int) -> str:
        """Fetch PR ``number``'s ``refs/merge-requests/N/head`` from the upstream; its sha."""
        local = f"refs/backport/pr/{number}/head"
        with repo_lock(self.path):
            self.ensure()
            out = self._fetch([f"+refs/merge-requests/{number}/head:{local}"],
                              "--filter=blob:none" if self.blobless else "--no-filter")
            if not out.ok:
                raise remote_failure(out, f"cannot fetch the commits of PR !{number} (refs/"
                                          f"merge-requests/{number}/head) from "
                                          f"{redact(self.upstream_url)}", "upstream-unreachable")
            return git(["rev-parse", "--verify", f"{local}^{{commit}}"],
                       cwd=self.path).stdout.strip()

    def remote_heads(self, branches: Sequence[str]) -> dict[str, str | None]:
        """branch -> current upstream sha (None when absent), by ``ls-remote``; fetches nothing."""
        return ls_remote(self.url, branches, self.env, "upstream-unreachable",
                         f"cannot list branches of upstream {redact(self.upstream_url)}")


def remote_shas(url: str, branches: list[str],
                env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The sha of each of ``branches`` on ``url`` in one ``ls-remote`` (None: no such branch)."""
    what = f"branch '{branches[0]}'" if len(branches) == 1 else "the fork branches"
    return ls_remote(url, branches, env, ErrorCode.FORK_UNREACHABLE,
                     f"cannot read {what} from {redact(url)}")


def remote_sha(url: str, branch: str, env: Mapping[str, str] | None = None) -> str | None:
    return remote_shas(url, [branch], env)[branch]


def push_branch(repo: Path, url: str, sha: str, branch: str, *, expect: str | None,
                env: Mapping[str, str] | None = None) -> None:
    """Set ``refs/heads/<branch>`` on ``url`` to ``sha`` if it is still at ``expect`` (None: not
    there yet); ``fork-diverged`` when someone else moved it (left alone)."""
    check_branch_name(branch)
    for what, given in (("commit", sha), ("expected commit", expect)):
        if given is not None and not _SHA.match(given):
            raise BackportError(ErrorCode.USAGE, f"{what} {given!r} is not a full commit id.")
    ref = f"refs/heads/{branch}"
    lease = f"--force-with-lease={ref}:{expect or ''}"
    out = token_git(["push", "--porcelain", "--no-verify", lease, "--", transport_url(url),
                     f"{sha}:{ref}"], repo=Path(repo), urls=(url,), env=env, check=False)
    rejected = [line for line in out.stdout.splitlines()
                if line.startswith("!\t") and line.split("\t")[1].endswith(f":{ref}")]
    if out.ok and not rejected:
        return
    shown = redact(url)
    if any(marker in line for line in rejected for marker in _LEASE_FAILED):
        try:
            now = remote_sha(url, branch, env)
        except BackportError:
            now = None
        raise ForkDiverged(
            f"fork branch '{branch}' on {shown} was moved by someone else (now at "
            f"{now[:7] if now else 'absent'}, expected {expect[:7] if expect else 'absent'}); "
            "it was left untouched: inspect that commit, then delete the fork branch "
            "if it may be replaced and run again.", remote=now, expected=expect)
    reasons = [rejected[0].split("\t")[-1].strip()] if rejected else []
    lines = (line.strip() for line in out.text.splitlines())  # why: fatal/error/remote lines
    causes = (re.sub(r"^(?:remote: )?(?:fatal:|error:)?", "", line).strip().rstrip(".")
              for line in lines if line.startswith(("fatal:", "error:", "remote:")))
    reasons += [c for c in causes if c and not any(n in c.lower() for n in _NOISE)][:4] or (
        [] if reasons else [out.reason])
    reason = redact("; ".join(dict.fromkeys(reasons)))
    code = ErrorCode.FORK_UNREACHABLE if is_unreachable(out.text) else ErrorCode.GIT
    raise BackportError(code, f"cannot push branch '{branch}' to {shown}: {reason}.",
                        details={"output": redact(out.text)})
