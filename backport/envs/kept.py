"""Warm workers kept alive between runs: one per user, interpreter, launch and device variables.

A kept worker listens on a Unix socket in a per-user folder only its owner can enter
(``$BACKPORT_RUNTIME_DIR``, else the user runtime folder, else ``<tmp>/backport-<uid>``) and
ends after ``idle`` seconds without a client (``BACKPORT_WORKER_IDLE``, default 600).
``BACKPORT_KEEP_WORKERS=0`` (or ``apply --no-keep-workers``) turns kept workers off.

Each worker was started with the environment's fingerprint (see ``fingerprint``); a client that
computes another one (a package installed, a variable changed) tells it to shut down and starts
a new one. Starting is serialised by a file lock per socket, so concurrent runs share one
worker. Each test is still a fresh fork of the worker. Environments with a ``source:`` script
are never served by a kept worker (see ``worker.start_worker``).

A kept worker runs in a PID namespace of its own (``sandbox``, not tied to the run that started
it: it outlives the run by design). It is trusted only as the process this tool started: the
starter records its pid and start time (``/proc/<pid>/stat``) next to the socket, and a client
connects only while that pid still has that start time, and talks only when the socket's peer
is that pid. Any other worker (a reused pid, a socket someone else bound) is left unspoken to
and a fresh one is started.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import socket
import stat
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from backport import process
from backport.envs import sandbox
from backport.envs.sandbox import sandboxed
from backport.errors import BackportError

DEFAULT_IDLE = 600.0
OFF_VALUES = ("0", "no", "false", "off")
HELLO_TIMEOUT = 30.0


class KeptUnavailable(Exception):
    """No kept worker can be used (folder unsafe, start failed); the run starts its own."""


@dataclass(frozen=True)
class KeepPolicy:
    """Where kept workers live and how long they wait for the next run."""

    folder: Path
    idle: float = DEFAULT_IDLE


def runtime_folder(environ: Mapping[str, str]) -> Path:
    """``$BACKPORT_RUNTIME_DIR``, else the user runtime folder when it exists, else tmp.

    On Linux the user runtime folder is ``$XDG_RUNTIME_DIR``; without it (CI, containers, cron)
    the tmp fallback is used directly rather than platformdirs' own, which warns on every run.
    """
    configured = environ.get("BACKPORT_RUNTIME_DIR")
    if configured:
        return Path(configured).expanduser()
    fallback = Path(tempfile.gettempdir()) / f"backport-{os.getuid()}"
    if sys.platform.startswith("linux") and not environ.get("XDG_RUNTIME_DIR"):
        return fallback
    runtime = Path(platformdirs.user_runtime_dir("backport"))
    if runtime.parent.is_dir() and os.access(runtime.parent, os.W_OK):
        return runtime
    return fallback


def keep_policy(environ: Mapping[str, str] | None = None) -> KeepPolicy | None:
    """The policy the environment asks for; None when kept workers are turned off."""
    environ = os.environ if environ is None else environ
    if environ.get("BACKPORT_KEEP_WORKERS", "1").strip().lower() in OFF_VALUES:
        return None
    try:
        idle = float(environ.get("BACKPORT_WORKER_IDLE") or DEFAULT_IDLE)
    except ValueError:
        idle = DEFAULT_IDLE
    return KeepPolicy(runtime_folder(environ), max(idle, 1.0))


def private_folder(folder: Path) -> Path:
    """``folder`` created 0700; KeptUnavailable unless it is ours and closed to others."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = os.lstat(folder)
    except OSError as exc:
        raise KeptUnavailable(f"cannot create {folder}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise KeptUnavailable(f"{folder} is not a folder only this user can enter")
    return folder


def socket_path(policy: KeepPolicy, launch: Sequence[str], variables: Mapping[str, str]) -> Path:
    """The socket of the worker for this launch, these variables, the folders its tests may
    write and those it hides (short: sockets have a 100-odd byte path limit)."""
    roots = sandbox.writable_roots()
    key = json.dumps([list(launch), sorted(variables.items()), roots, sandbox.hidden_places(roots)])
    return policy.folder / f"w-{hashlib.sha256(key.encode()).hexdigest()[:20]}.sock"


def read_hello(sock: socket.socket, timeout: float) -> dict:
    sock.settimeout(timeout)
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise OSError("the kept worker closed the connection")
        data += chunk
    sock.settimeout(None)
    return dict(json.loads(data))


def stat_start_time(stat_text: str) -> str | None:
    """The start time (field 22, clock ticks since boot) of a ``/proc/<pid>/stat`` line; the
    command name (field 2) may hold spaces and parentheses, so fields count from its last ')'."""
    _, paren, rest = stat_text.rpartition(")")
    fields = rest.split()
    return fields[19] if paren and len(fields) > 19 else None


def start_time(pid: int) -> str | None:
    """When process ``pid`` started (None: no such process)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return stat_start_time(handle.read())
    except OSError:
        return None


def peer_pid(sock: socket.socket) -> int:
    """The pid (in this process's namespace) of the process at the other end of ``sock``."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[0])


def record_path(path: Path) -> Path:
    """Where the starter of the worker behind socket ``path`` records who it is."""
    return path.with_suffix(".json")


def trusted_record(record: Mapping[str, object], peer: int | None = None) -> bool:
    """True when ``record`` (pid, start time) still describes the process it was written for:
    that pid runs and has the recorded start time (a reused pid has another), and ``peer``, the
    process at the other end of a connection, when given, is that pid."""
    pid, started = record.get("pid"), record.get("start")
    if not isinstance(pid, int) or pid <= 0 or not isinstance(started, str):
        return False
    return (peer is None or peer == pid) and start_time(pid) == started


def read_record(path: Path) -> dict:
    """The record of the worker behind socket ``path`` ({} when none can be read)."""
    try:
        data = json.loads(record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_record(path: Path, pid: int, isolation: str) -> None:
    started = start_time(pid)
    target = record_path(path)
    fd = os.open(target.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"pid": pid, "start": started, "isolation": isolation}, handle)
    os.replace(target.with_suffix(".tmp"), target)


def _connect(path: Path, fingerprint: str, record: Mapping[str, object] | None = None,
             ) -> tuple[socket.socket, dict] | None:
    """A connection to the worker at ``path`` if it runs with ``fingerprint``; else None (a
    worker with another fingerprint or a retired one is told to shut down).

    With ``record`` (the starter's), only the recorded process is spoken to: no connection
    while its pid has another start time, none kept when the socket's peer is another pid.
    """
    if record is not None and not trusted_record(record):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        if record is not None and not trusted_record(record, peer_pid(sock)):
            sock.close()
            return None
        hello = read_hello(sock, HELLO_TIMEOUT)
        hello["pid"] = peer_pid(sock)  # its own pid is the namespace's; ours is this one
    except (OSError, ValueError):
        sock.close()
        return None
    if hello.get("ready") and hello.get("fingerprint") == fingerprint and not hello.get("retired"):
        if record is not None:
            hello["isolation"] = record.get("isolation")
        return sock, hello
    _shut_down(sock)
    return None


def _shut_down(sock: socket.socket) -> None:
    """Tell the worker behind ``sock`` to go (it ends once its clients have), and hang up."""
    try:
        sock.sendall(b'{"shutdown": true}\n')
    except OSError:
        pass
    sock.close()


def connect_or_start(
    policy: KeepPolicy,
    launch: Sequence[str],
    script: Path,
    variables: Mapping[str, str],
    process_env: Mapping[str, str],
    fingerprint: str,
    start_timeout: float,
    load_check: float | None = None,
) -> tuple[socket.socket, dict]:
    """A connection to the kept worker for ``launch`` + ``variables``, started if needed.

    Returns the socket and the worker's hello (``started``: True when this call started it).
    With ``load_check`` a worker started now runs the probe's torch_npu load check (that
    timeout) in a fork; its result is the hello's ``load_check``, for this client and every
    later one (it holds while the worker does: the fingerprint covers what it depends on). A
    worker started without one has none, whoever attaches.
    """
    folder = private_folder(policy.folder)
    path = socket_path(policy, launch, variables)
    with open(folder / (path.stem + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _connect(path, fingerprint, read_record(path))
        if found is not None and found[1].get("isolation") == sandbox.isolation().kind:
            return found[0], {**found[1], "started": False}
        if found is not None:  # ours, but started without the sandbox this host now gives
            _shut_down(found[0])
        for stale in (path, record_path(path)):  # stale, untrusted, or shut down just now
            try:
                stale.unlink()
            except FileNotFoundError:
                pass
        # A killed worker's scratch folder stays behind; it is of no use to the next one.
        shutil.rmtree(path.with_suffix(".spool"), ignore_errors=True)
        isolation = _start(policy, path, launch, script, process_env, fingerprint,
                                    start_timeout, load_check)
        found = _connect(path, fingerprint)
        if found is None:
            raise KeptUnavailable("the kept worker started but does not answer")
        _write_record(path, int(found[1]["pid"]), isolation)
        return found[0], {**found[1], "started": True, "isolation": isolation}


def _start(policy: KeepPolicy, path: Path, launch: Sequence[str], script: Path,
           process_env: Mapping[str, str], fingerprint: str, start_timeout: float,
           load_check: float | None = None) -> str:
    """Start the kept worker in a PID namespace of its own; returns its isolation."""
    spool = path.with_suffix(".spool")
    spool.mkdir(mode=0o700, exist_ok=True)
    argv = [*launch, str(script), "torch", "--socket", str(path), "--idle", f"{policy.idle:g}",
            "--fingerprint", fingerprint, "--spool", str(spool)]
    if load_check is not None:
        argv += ["--load-check", f"{load_check:g}"]
    start = sandboxed(argv, tied=False, writable=[policy.folder])  # its socket and spool
    if start.isolation != "none":
        start.argv.append("--sandboxed")
    log_path = path.with_suffix(".log")
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        proc = process.spawn(start.argv, stderr=fd, env=process_env, cwd=tempfile.gettempdir(),
                             context="cannot start a kept worker: ", pass_fds=start.pass_fds)
    except BackportError as exc:
        raise KeptUnavailable(exc.message) from None
    finally:
        os.close(fd)
    assert proc.stdout is not None
    # Reap it whenever it ends, so it never lingers as a zombie of this process.
    threading.Thread(target=proc.wait, daemon=True, name=f"kept-worker-{proc.pid}").start()
    line = _read_line(proc.stdout.fileno(), start_timeout)
    proc.stdout.close()
    try:
        hello = json.loads(line) if line else {}
    except ValueError:
        hello = {}
    if not hello.get("ready"):
        process.kill_group(proc.pid)
        raise KeptUnavailable(str(hello.get("error") or "the kept worker did not start"))
    return start.isolation


def _read_line(fd: int, timeout: float) -> bytes:
    import selectors

    deadline = time.monotonic() + timeout
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return b""
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\n", 1)[0]


def stop_kept_workers(folder: Path) -> list[int]:
    """Ask every kept worker in ``folder`` to shut down; returns the pids that were asked."""
    asked = []
    for path in sorted(Path(folder).glob("w-*.sock")):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
            read_hello(sock, HELLO_TIMEOUT)
            sock.sendall(b'{"shutdown": true}\n')
            asked.append(peer_pid(sock))
        except (OSError, ValueError):
            pass
        finally:
            sock.close()
    return asked


def kept_workers(environ: Mapping[str, str]) -> tuple[int, float] | None:
    """How many kept workers have a socket in the runtime folder, and how long they stay idle;
    None when none do or keeping is off."""
    policy = keep_policy(environ)
    if policy is None:
        return None
    count = len(list(policy.folder.glob("w-*.sock")))
    return (count, policy.idle) if count else None
