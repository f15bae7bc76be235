"""The client of a run's warm worker (``scripts/warm_worker.py``), which imported torch once and
forks each test; a reader thread hands each reply to its request by ``id``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import tempfile
import threading
from typing import IO

from backport import process
from backport.config.model import Environment
from backport.envs.launch import launch_argv
from backport.envs.probe import SCRIPTS_DIR, env_vars
from backport.envs.sandbox import sandboxed
from backport.errors import BackportError

WORKER_START_TIMEOUT = 300.0  # importing torch_npu with CANN can take a while


class WorkerDied(Exception):
    """The warm worker went away or stopped answering."""


class Worker:
    """``env``'s running warm worker (``load_check``: it runs the probe's torch_npu check too)."""

    def __init__(self, env: Environment, extra_env: dict[str, str], *,
                 load_check: float | None = None) -> None:
        self._stderr: IO[bytes] = tempfile.TemporaryFile()
        script = str(SCRIPTS_DIR / "warm_worker.py")
        argv = launch_argv(env, [script, "torch"], {**env.env, **extra_env})
        if load_check is not None:
            argv += ["--load-check", f"{load_check:g}"]
        start = sandboxed(argv)
        self.isolation = start.isolation
        try:
            self.proc: process.Popen[bytes] = process.spawn(
                start.argv, stdin=process.PIPE, stdout=process.PIPE, stderr=self._stderr,
                env=env_vars(env, extra_env), cwd=tempfile.gettempdir(), pass_fds=start.pass_fds)
        except BackportError as exc:  # the interpreter cannot start
            self._stderr.close()
            raise WorkerDied(exc.message) from None
        self.pid = int(self.proc.pid)
        self._send_lock = threading.Lock()
        self._waiters_lock = threading.Lock()
        self._waiters: dict[int, queue.Queue[dict | None]] = {0: queue.Queue()}  # 0: the hello
        self._ids = itertools.count(1)
        self.gone: str | None = None  # why the worker's output ended
        self._reader = threading.Thread(target=self._read_replies, daemon=True,
                                        name=f"warm-worker-{self.pid}")
        self._reader.start()
        try:
            hello = next_reply(self._waiters[0], WORKER_START_TIMEOUT)
        except WorkerDied:  # its last line on stderr says why
            with contextlib.suppress(process.TimeoutExpired):
                self.proc.wait(timeout=5)
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            hello = {"ready": False, "error": lines[-1] if lines else "it exited"}
        if hello is None:
            hello = {"ready": False, "error": f"no answer within {WORKER_START_TIMEOUT:g}s"}
        if not hello.get("ready"):
            self.stop()
            raise WorkerDied(str(hello.get("error") or "it did not start"))
        self.done(0)
        self.load_check: dict | None = hello.get("load_check")  # see probe_env.load_check

    def _read_replies(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                message = json.loads(line)
                with self._waiters_lock:
                    waiter = self._waiters.get(message.get("id", 0))
                if waiter is not None:
                    waiter.put(message)
        except (OSError, ValueError) as exc:
            self.gone = f"unreadable reply: {exc}"
        finally:
            self.gone = self.gone or "the worker closed its output"
            with self._waiters_lock:
                waiters = list(self._waiters.values())
            for waiter in waiters:
                waiter.put(None)

    def alive(self) -> bool:
        return self.proc.poll() is None and self.gone is None

    def _send(self, message: dict) -> None:
        line = (json.dumps(message) + "\n").encode("utf-8")
        with self._send_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line)
            self.proc.stdin.flush()

    def submit(self, request: dict) -> tuple[int, queue.Queue[dict | None]]:
        """Send ``request``; its replies arrive on the returned queue (None: the worker died)."""
        waiter: queue.Queue[dict | None] = queue.Queue()
        with self._waiters_lock:
            rid = next(self._ids)
            self._waiters[rid] = waiter
        try:
            self._send({**request, "id": rid})
        except (OSError, ValueError) as exc:
            self.done(rid)
            raise WorkerDied(f"cannot send a request: {exc}") from None
        if self.gone is not None:
            waiter.put(None)
        return rid, waiter

    def kill(self, pid: int) -> None:
        """Have the worker kill the group of its child ``pid``."""
        with contextlib.suppress(OSError, ValueError):  # gone, and its namespace with it
            self._send({"kill": pid})

    def done(self, rid: int) -> None:
        with self._waiters_lock:
            self._waiters.pop(rid, None)

    def stop(self, wait: float = 5.0) -> None:
        """Close stdin (the worker exits once its children end); kill it if it lingers."""
        with contextlib.suppress(OSError), self._send_lock:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=wait)
        except process.TimeoutExpired:
            process.kill_group(self.proc.pid)
            self.proc.wait()
        self._reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


class EarlyWorker:
    """A worker started before the probe ends on guessed variables; adopted only if they match."""

    def __init__(self, env: Environment, extra_env: dict[str, str], *,
                 load_check: float | None = None) -> None:
        self.env = env
        self.load_check = load_check
        self.extra_env = dict(extra_env)
        self._worker: Worker | None = None
        self._checked: dict | None = None
        self._thread = threading.Thread(target=self._start, name=f"early-worker-{env.name}",
                                        daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self._worker = Worker(self.env, self.extra_env, load_check=self.load_check)
            self._checked = self._worker.load_check
        except (WorkerDied, OSError):
            pass  # the runner starts its own, the probe runs its own check

    def load_check_result(self) -> dict | None:
        self._thread.join()
        return self._checked

    def take(self, extra_env: dict[str, str]) -> Worker | None:
        """The started worker if it runs with ``extra_env``; else None (and it is stopped)."""
        self._thread.join()
        worker, self._worker = self._worker, None
        if worker is not None and (extra_env != self.extra_env or not worker.alive()):
            worker.stop()
            worker = None
        return worker

    def discard(self) -> None:
        if self._thread.is_alive():
            threading.Thread(target=self.take, args=({"discard": "-"},), daemon=True).start()
        else:
            self.take({"discard": "-"})


def next_reply(waiter: queue.Queue[dict | None], timeout: float) -> dict | None:
    """The next reply, None on timeout; WorkerDied when the worker went away."""
    try:
        message = waiter.get(timeout=max(timeout, 0.0))
    except queue.Empty:
        return None
    if message is None:
        raise WorkerDied("the worker went away")
    return message
