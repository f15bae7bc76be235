"""The sandbox of code from a branch or a PR: a PID namespace of the run.

Every process that runs such code (the probe, warm workers and the tests they fork, isolated
and overlay test runs) starts through :func:`sandboxed`: ``scripts/sandbox_init.py``, run by
this tool's own interpreter, unshares a user, PID and mount namespace, mounts the namespace's
own ``/proc``, makes every mount read-only but the writable folders (:func:`writable_roots`:
the temporary folders and the run's worktrees, :func:`allow_writes`), covers the places the
user's credentials live (:func:`hidden_places`, ``envs/hidden.py``) and the block devices,
gives up its capabilities and starts the command inside. A test gets a narrower view
(:func:`test_view`): temporary folders of its own (fresh tmpfs mounts), its own worktree the
only writable folder (its ``.git`` read-only, the other worktrees covered), and what it reads
bound back read-only wherever it lies (a project or venv under ``/tmp``); an isolated run gets
it from the init, a test forked from the warm worker (which serves every branch of its
environment) in a namespace of its own, before any of its code runs. The command sees no process outside the
namespace (so no other process's ``/proc/<pid>/environ``, where ``backport`` or a CI shell
keeps a token), cannot change what a later step runs or reads (the tool's installation, the
journal, the patch sets, git's configuration), and every process of the namespace ends with it: when the command ends, when
its launcher is killed, and when this process ends in any way (even SIGKILL), through the
lifeline, a pipe whose write end only this process holds.

A small launcher we control was chosen over util-linux's ``unshare``: it needs no particular
util-linux version (``--map-current-user`` is recent), keeps the user's own uid (tests that
behave differently as root stay as they are) and watches the lifeline, which ``unshare
--kill-child`` cannot (it ties the namespace to ``unshare`` itself, which outlives a killed
parent). Python 3.11 has no ``os.unshare``; the launcher calls libc through ``ctypes``.

Whether the host allows namespaces is probed once per process (:func:`isolation`); where it
does not, commands start as they are, the evidence says so (``report/wording.py``) and ``trigger``
refuses PR tests unless the environment says ``isolation: none`` (:func:`require_isolation`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import backport
from backport import process
from backport.config.branch_map import cache_root
from backport.config.model import BranchMap
from backport.envs.hidden import credential_places, to_hide
from backport.errors import BackportError, ErrorCode

INIT_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts",
                           "sandbox_init.py")
PID_NAMESPACE = "pid-namespace"
NONE = "none"
CHECK_TIMEOUT = 30.0

_lock = threading.Lock()
_probed: Isolation | None = None
_lifeline: int | None = None  # the read end handed to every sandbox; we keep the write end
_lifeline_writer: int | None = None
_said = False
_allowed: tuple[str, ...] = ()
_reads: tuple[str, ...] = ()
_hidden_also: tuple[str, ...] = ()
TEMPORARY = ("/tmp", "/var/tmp", "/dev/shm")


@dataclass(frozen=True)
class Isolation:
    """What the host allows: ``kind`` is "pid-namespace" or "none" (``why``: the refusal)."""

    kind: str
    why: str = ""

    @property
    def isolated(self) -> bool:
        return self.kind == PID_NAMESPACE


@dataclass(frozen=True)
class Start:
    """A command as it is started: its argv, the descriptors it inherits, its isolation."""

    argv: list[str]
    pass_fds: tuple[int, ...]
    isolation: str


def _launcher(writable: Sequence[str] = (), view: Sequence[str] = ()) -> list[str]:
    out = [sys.executable, "-I", "-S", INIT_SCRIPT, *view]
    for root in writable:
        out += ["--writable", root]
    opened = [*writable, *(view[i + 1] for i in range(0, len(view), 2)
                           if view[i] == "--writable")]
    for place in hidden_places(opened):
        out += ["--hide", place]
    return out


def hidden_places(writable: Sequence[str] = ()) -> tuple[str, ...]:
    """The existing places of this user's credentials (``envs/hidden.py``, and those
    :func:`hide_also` named) a sandbox covers, but for those that hold a ``writable`` folder."""
    return to_hide([*credential_places(os.environ), *_hidden_also], writable)


def allow_writes(folders: Iterable[Path], reads: Iterable[Path] = ()) -> None:
    """Let code from a branch write in ``folders`` too (made where missing): the run's
    worktrees, each test only its own (:func:`test_view`); and let a test read ``reads`` (the
    project) wherever they lie. Set once per run, before any sandbox starts."""
    global _allowed, _reads
    found = []
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        found.append(os.path.realpath(folder))
    _allowed = tuple(sorted(set(found)))  # one assignment each: read without the lock
    _reads = tuple(os.path.realpath(r) for r in reads)


def hide_also(places: Iterable[str]) -> None:
    """Cover ``places`` too (the files git's configured credential helpers name). Set once
    per run, before any sandbox starts."""
    global _hidden_also
    # a store's file or a cache's socket, never a folder: a helper naming one (`--file ~`)
    # would cover what the tests need
    _hidden_also = tuple(p for p in places if not os.path.isdir(p))  # read without the lock


def writable_roots(extra: Iterable[str | Path] = ()) -> tuple[str, ...]:
    """The folders a sandbox may write: the temporary ones, :func:`allow_writes`' and
    ``extra``, but for those inside another (a project's worktrees in ``/tmp``); every other
    file is read-only inside."""
    allowed = _allowed
    temps = [tempfile.gettempdir(), *TEMPORARY]
    found = {os.path.realpath(t) for t in temps if os.path.isdir(t)}
    found.update(allowed)
    found.update(os.path.realpath(e) for e in extra)
    return tuple(root for root in sorted(found) if not _inside_another(root, found))


def temporary_folders() -> tuple[str, ...]:
    """The temporary folders (``$TMPDIR``, ``/tmp``, ``/var/tmp``, ``/dev/shm``) this host has."""
    temps = [tempfile.gettempdir(), *TEMPORARY]
    return tuple(sorted({os.path.realpath(t) for t in temps if os.path.isdir(t)}))


def test_view(worktree: Path, reads: Iterable[str | Path] = ()) -> list[str]:
    """``sandbox_init.py``'s options that give one test its view: every temporary folder
    fresh, empty and its own; the run's worktrees covered, but ``worktree``, writable, with
    its ``.git`` read-only; and, read-only wherever they lie (in ``/tmp`` too), what a test
    reads: ``reads`` (its environment), the project, the cache, the tool's installation and
    the folder ``backport`` runs in (a CI workspace)."""
    own = os.path.realpath(worktree)
    args: list[str] = []
    for folder in temporary_folders():
        args += ["--private", folder]
    for root in _allowed:
        args += ["--cover", root]
    args += ["--writable", own]
    tool = os.path.dirname(os.path.dirname(os.path.abspath(backport.__file__)))
    wanted = [*_reads, str(cache_root(os.environ)), sys.prefix, tool, _here(), *reads]
    for path in dict.fromkeys([*(os.path.realpath(p) for p in wanted), *_git_metadata(own)]):
        theirs = _inside_another(path, {path, *_allowed}) and not path.startswith(own + "/")
        if os.path.lexists(path) and not theirs:
            args += ["--visible", path]  # never another branch's worktree
    return args


def _here() -> str:
    try:
        return os.getcwd()
    except OSError:  # removed: nothing to bring back
        return "/"


def _git_metadata(worktree: str) -> list[str]:
    """The worktree's ``.git`` and, for a linked worktree, the folder it names (the cache
    repository's ``worktrees/<name>``) and that repository's git folder."""
    dot_git = os.path.join(worktree, ".git")
    if not os.path.isfile(dot_git):
        return [dot_git] if os.path.isdir(dot_git) else []
    try:
        with open(dot_git, encoding="utf-8") as handle:
            pointer = handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return [dot_git]
    if not pointer.startswith("gitdir:"):
        return [dot_git]
    admin = os.path.realpath(os.path.join(worktree, pointer.removeprefix("gitdir:").strip()))
    found = [dot_git, admin]
    try:
        with open(os.path.join(admin, "commondir"), encoding="utf-8") as handle:
            found.append(os.path.realpath(os.path.join(admin, handle.read().strip())))
    except (OSError, UnicodeDecodeError):
        pass
    return [p for p in found if os.path.lexists(p)]


def _inside_another(root: str, roots: set[str]) -> bool:
    """Whether ``root`` lies in another of ``roots`` (writable already: one rule, one worker)."""
    return any(other != root and root.startswith(other.rstrip("/") + "/") for other in roots)


def isolation() -> Isolation:
    """Whether this host lets the tool make a PID namespace; asked once per process."""
    global _probed
    with _lock:
        if _probed is None:
            _probed = _check()
        return _probed


def _check() -> Isolation:
    try:
        done = process.run([*_launcher(writable_roots()), "--check"], timeout=CHECK_TIMEOUT)
    except BackportError as exc:
        return Isolation(NONE, exc.message)
    if done.ok:
        return Isolation(PID_NAMESPACE)
    lines = done.err.strip().splitlines()
    why = lines[-1].removeprefix("backport sandbox: ") if lines else f"exit code {done.returncode}"
    return Isolation(NONE, "timed out" if done.timed_out else why)


def forget() -> None:
    """Probe again on the next :func:`isolation` call (for tests that change the host's answer
    with ``BACKPORT_SANDBOX_REFUSE``)."""
    global _probed, _said
    with _lock:
        _probed, _said = None, False


def refusal_notice() -> str | None:
    """The one sentence that says tests run without isolation, the first time it is asked
    (None after that, and where the host isolates)."""
    global _said
    found = isolation()
    with _lock:
        if found.isolated or _said:
            return None
        _said = True
    return (f"warning: no sandbox for tests, the host refuses PID namespaces ({found.why}): "
            "they can see every process of this user; the evidence says so")


def _lifeline_fd() -> int:
    """The read end of the lifeline (made on first use; the write end never leaves us)."""
    global _lifeline, _lifeline_writer
    with _lock:
        if _lifeline is None:
            _lifeline, _lifeline_writer = os.pipe()  # both close-on-exec: no child inherits
        return _lifeline


def sandboxed(argv: Sequence[str], *, writable: Iterable[str | Path] = (),
              view: Sequence[str] = ()) -> Start:
    """``argv`` started in a PID namespace of its own (as it is where the host refuses), where
    only :func:`writable_roots` (with ``writable``) can be written; with ``view`` (a test's,
    :func:`test_view`), only what it makes writable and ``writable``. The namespace ends when
    this process ends."""
    if not isolation().isolated:
        return Start(list(argv), (), NONE)
    roots = [os.path.realpath(w) for w in writable] if view else writable_roots(writable)
    launcher = _launcher(roots, view)
    fd = _lifeline_fd()
    return Start([*launcher, "--lifeline", str(fd), "--", *argv], (fd,), PID_NAMESPACE)


def require_isolation(branch_map: BranchMap, targets: Iterable[str]) -> None:
    """Refuse to run a PR's tests on ``targets`` without isolation, unless the environment of
    each says ``isolation: none`` in branches.yaml (an NPU host that needs it)."""
    found = isolation()
    if found.isolated:
        return
    envs = [branch_map.environments[branch_map.targets[t].env] for t in targets]
    unwilling = sorted({env.name for env in envs if env.isolation != NONE})
    if unwilling:
        raise BackportError(
            ErrorCode.CONFIG,
            f"this host refuses PID namespaces ({found.why}), so a PR's tests would run "
            f"without isolation; environment {', '.join(unwilling)} does not allow that "
            "(set `isolation: none` on it in branches.yaml to accept it, or pass --skip-tests)")
