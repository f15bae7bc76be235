"""The sandbox every process that runs code from a branch or a PR starts in (:func:`sandboxed`).

``scripts/sandbox_init.py`` makes a user, PID and mount namespace with its own ``/proc`` (no
other process's ``environ`` readable), every mount read-only but :func:`writable_roots`, the
credential places and block devices covered, no capability left. A test's view
(:func:`test_view`): private temporary folders, only its worktree writable (``.git`` read-only,
other worktrees covered). The namespace ends with this process through the lifeline, a pipe
whose write end only we hold. Where the host refuses namespaces (:func:`isolation`) commands
start as they are, the evidence says so, and PR tests need ``isolation: none``.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import backport
from backport import process
from backport.config.branch_map import cache_root
from backport.config.model import BranchMap
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
_warned = False
_allowed: tuple[str, ...] = ()
_reads: tuple[str, ...] = ()
_covered_also: tuple[str, ...] = ()
TEMPORARY = ("/tmp", "/var/tmp", "/dev/shm")
# Sockets of services that start commands for whoever may connect: container engines, the bus.
SERVICE_SOCKETS = (
    "/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock",
    "/run/podman/podman.sock", "/run/crio/crio.sock", "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket", "/run/systemd/private",
)


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
    for place in covered_places(opened):
        out += ["--hide", place]
    return out


def covered_places(writable: Sequence[str] = ()) -> tuple[str, ...]:
    """The existing credential places a sandbox covers."""
    return places_to_cover([*credential_places(os.environ), *_covered_also], writable)


def credential_places(environ: Mapping[str, str], uid: int | None = None) -> list[str]:
    """Where credentials of the user of ``environ`` may be: git's store and cache, netrc, SSH,
    GnuPG, the runtime folder, service sockets (helpers' files: :func:`cover_also`)."""
    home = environ.get("HOME") or os.path.expanduser("~")
    config = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    runtime = environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid() if uid is None else uid}"
    places = [
        os.path.join(home, ".git-credentials"), os.path.join(config, "git", "credentials"),
        os.path.join(cache, "git", "credential"), os.path.join(home, ".git-credential-cache"),
        environ.get("NETRC") or os.path.join(home, ".netrc"), os.path.join(home, "_netrc"),
        os.path.join(home, ".ssh"), environ.get("SSH_AUTH_SOCK", ""),
        environ.get("GNUPGHOME") or os.path.join(home, ".gnupg"), runtime, *SERVICE_SOCKETS,
    ]
    return [p for p in places if p]


def helper_paths(value: str) -> list[str]:
    """The ``--file`` / ``--socket`` paths one ``credential.helper`` value names."""
    try:
        words = shlex.split(value)
    except ValueError:
        return []
    found = []
    for index, word in enumerate(words):
        option, equals, rest = word.partition("=")
        if option in ("--file", "--socket"):  # git-credential-store's and -cache's
            if equals:
                found.append(rest)
            elif index + 1 < len(words):
                found.append(words[index + 1])
    return [os.path.expanduser(p) for p in found]


def places_to_cover(places: Iterable[str], keep: Iterable[str]) -> tuple[str, ...]:
    """The existing ``places`` to cover; one holding a folder of ``keep`` (a $TMPDIR in the
    runtime folder) is covered entry by entry around it, links where they lead."""
    kept = [os.path.realpath(k) for k in keep]
    out: set[str] = set()

    def cover(path: str, descend: bool = True) -> None:
        if not os.path.lexists(path):
            return
        holding = [k for k in kept if k == path or k.startswith(path.rstrip("/") + "/")]
        if not holding:
            out.add(path)
            return
        if not descend or path in holding or not os.path.isdir(path):
            return  # the writable folder itself, or a link's target that holds one
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_symlink():  # covered where it leads, never walked through
                cover(os.path.realpath(entry.path), descend=False)
            else:
                cover(entry.path)

    for place in places:
        cover(os.path.realpath(place))
    return tuple(sorted(out))


def allow_writes(folders: Iterable[Path], reads: Iterable[Path] = ()) -> None:
    """Let sandboxes write in ``folders`` (the run's worktrees; a test only its own) and tests
    read ``reads`` (the project) wherever they lie; set once per run."""
    global _allowed, _reads
    found = []
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        found.append(os.path.realpath(folder))
    _allowed = tuple(sorted(set(found)))  # one assignment each: read without the lock
    _reads = tuple(os.path.realpath(r) for r in reads)


def cover_also(places: Iterable[str]) -> None:
    """Cover ``places`` too (the files git's credential helpers name); set once per run."""
    global _covered_also
    # a store's file or a cache's socket, never a folder (`--file ~` would cover the home)
    _covered_also = tuple(p for p in places if not os.path.isdir(p))  # read without the lock


def writable_roots(extra: Iterable[str | Path] = ()) -> tuple[str, ...]:
    """The folders a sandbox may write (temporary ones, :func:`allow_writes`' and ``extra``)."""
    found = {*temporary_folders(), *_allowed}
    found.update(os.path.realpath(e) for e in extra)
    return tuple(root for root in sorted(found) if not _inside_another(root, found))


def temporary_folders() -> tuple[str, ...]:
    """The temporary folders (``$TMPDIR``, ``/tmp``, ``/var/tmp``, ``/dev/shm``) this host has."""
    temps = [tempfile.gettempdir(), *TEMPORARY]
    return tuple(sorted({os.path.realpath(t) for t in temps if os.path.isdir(t)}))


def test_view(worktree: Path, reads: Iterable[str | Path] = ()) -> list[str]:
    """``sandbox_init.py``'s options for one test: private temporary folders, the worktrees
    covered but ``worktree`` (writable), ``reads``, project, cache, tool and cwd read-only."""
    own = os.path.realpath(worktree)
    args: list[str] = []
    for folder in temporary_folders():
        args += ["--private", folder]
    for root in _allowed:
        args += ["--cover", root]
    args += ["--writable", own]
    tool = os.path.dirname(os.path.dirname(os.path.abspath(backport.__file__)))
    try:
        here = os.getcwd()
    except OSError:  # removed: nothing to bring back
        here = "/"
    wanted = [*_reads, str(cache_root(os.environ)), sys.prefix, tool, here, *reads]
    for path in dict.fromkeys([*(os.path.realpath(p) for p in wanted), *_git_metadata(own)]):
        theirs = _inside_another(path, {path, *_allowed}) and not path.startswith(own + "/")
        if os.path.lexists(path) and not theirs:
            args += ["--visible", path]  # never another branch's worktree
    return args


def _git_metadata(worktree: str) -> list[str]:
    """The worktree's ``.git``, and a linked worktree's admin and common git folders."""
    dot_git = os.path.join(worktree, ".git")
    if not os.path.isfile(dot_git):
        return [dot_git] if os.path.isdir(dot_git) else []
    try:
        pointer = Path(dot_git).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return [dot_git]
    if not pointer.startswith("gitdir:"):
        return [dot_git]
    admin = os.path.realpath(os.path.join(worktree, pointer.removeprefix("gitdir:").strip()))
    found = [dot_git, admin]
    try:
        common = Path(admin, "commondir").read_text(encoding="utf-8").strip()
        found.append(os.path.realpath(os.path.join(admin, common)))
    except (OSError, UnicodeDecodeError):
        pass
    return [p for p in found if os.path.lexists(p)]


def _inside_another(root: str, roots: set[str]) -> bool:
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
    """Probe again on the next :func:`isolation` call (tests set ``BACKPORT_SANDBOX_REFUSE``)."""
    global _probed, _warned
    with _lock:
        _probed, _warned = None, False


def refusal_notice() -> str | None:
    """The warning that tests run without isolation, once per process (None where isolated)."""
    global _warned
    found = isolation()
    with _lock:
        if found.isolated or _warned:
            return None
        _warned = True
    return (f"warning: no sandbox for tests, the host refuses PID namespaces ({found.why}): "
            "they can see every process of this user; the evidence says so")


def sandboxed(argv: Sequence[str], *, view: Sequence[str] = ()) -> Start:
    """``argv`` in a namespace where only :func:`writable_roots` (or what a test's ``view``
    opens) can be written; as it is where the host refuses."""
    if not isolation().isolated:
        return Start(list(argv), (), NONE)
    global _lifeline, _lifeline_writer
    with _lock:
        if _lifeline is None:  # both ends close-on-exec; only the read end is passed on
            _lifeline, _lifeline_writer = os.pipe()
        fd = _lifeline
    launcher = _launcher([] if view else writable_roots(), view)
    return Start([*launcher, "--lifeline", str(fd), "--", *argv], (fd,), PID_NAMESPACE)


def require_isolation(branch_map: BranchMap, targets: Iterable[str]) -> None:
    """Refuse a PR's tests on ``targets`` without isolation, unless their environments allow."""
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
