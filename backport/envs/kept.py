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
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from backport import process
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
    """The socket of the worker for this launch and these variables (short: sockets have a
    100-odd byte path limit)."""
    key = json.dumps([list(launch), sorted(variables.items())])
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


def _connect(path: Path, fingerprint: str) -> tuple[socket.socket, dict] | None:
    """A connection to the worker at ``path`` if it runs with ``fingerprint``; else None (a
    worker with another fingerprint or a retired one is told to shut down)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        hello = read_hello(sock, HELLO_TIMEOUT)
    except (OSError, ValueError):
        sock.close()
        return None
    if hello.get("ready") and hello.get("fingerprint") == fingerprint and not hello.get("retired"):
        return sock, hello
    try:
        sock.sendall(b'{"shutdown": true}\n')
    except OSError:
        pass
    sock.close()
    return None


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
    timeout) in a fork; its result is the hello's ``load_check``.
    """
    folder = private_folder(policy.folder)
    path = socket_path(policy, launch, variables)
    with open(folder / (path.stem + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _connect(path, fingerprint)
        if found is not None:
            return found[0], {**found[1], "started": False}
        try:
            path.unlink()  # stale, or shut down just now
        except FileNotFoundError:
            pass
        # A killed worker's scratch folder stays behind; it is of no use to the next one.
        shutil.rmtree(path.with_suffix(".spool"), ignore_errors=True)
        started = _start(policy, path, launch, script, process_env, fingerprint, start_timeout,
                         load_check)
        found = _connect(path, fingerprint)
        if found is None:
            raise KeptUnavailable("the kept worker started but does not answer")
        return found[0], {**found[1], "started": True, "load_check": started.get("load_check")}


def _start(policy: KeepPolicy, path: Path, launch: Sequence[str], script: Path,
           process_env: Mapping[str, str], fingerprint: str, start_timeout: float,
           load_check: float | None = None) -> dict:
    """Start the kept worker; returns its ready line."""
    argv = [*launch, str(script), "torch", "--socket", str(path), "--idle", f"{policy.idle:g}",
            "--fingerprint", fingerprint, "--spool", str(path.with_suffix(".spool"))]
    if load_check is not None:
        argv += ["--load-check", f"{load_check:g}"]
    log_path = path.with_suffix(".log")
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        proc = process.spawn(argv, stderr=fd, env=process_env, cwd=tempfile.gettempdir(),
                             context="cannot start a kept worker: ")
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
    return hello


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
            hello = read_hello(sock, HELLO_TIMEOUT)
            sock.sendall(b'{"shutdown": true}\n')
            asked.append(int(hello.get("pid") or 0))
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
