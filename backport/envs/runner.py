"""Run one test file in an environment: forked from a warm worker, or as its own process.

The warm worker (``scripts/warm_worker.py``) is one long-lived interpreter per environment that
imported torch once; every test is a fork of it, so a run skips the import cost.  When the
worker cannot start or dies, or ``isolated=True``, each test is ``python <path> <args>`` in a
fresh process.  Either way the test runs from the worktree root, in its own process group, with
its output in ``log_path``, and a timeout kills the whole group.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from backport.config.model import Environment, TestSpec
from backport.envs.device import device_verdict
from backport.envs.model import Probe, TestRun
from backport.envs.probe import SCRIPTS_DIR, display_path, env_vars, require_interpreter
from backport.envs.summary import parse_summary
from backport.errors import BackportError
from backport.redact import redact

WORKER_SCRIPT = SCRIPTS_DIR / "warm_worker.py"
WORKER_START_TIMEOUT = 300.0  # importing torch_npu with CANN can take a while
REPLY_TIMEOUT = 30.0  # for protocol replies that need no test to run
LOG_TAIL = 4 * 1024 * 1024  # the summary is at the end; read at most this much


class WorkerDied(Exception):
    """The warm worker went away or stopped answering."""


class _Lines:
    """Newline-delimited reads from a pipe with a deadline."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._fd = stream.fileno()
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)

    def read(self, timeout: float) -> dict | None:
        """The next JSON line, or None when ``timeout`` passes first; WorkerDied on EOF."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                return None
            chunk = os.read(self._fd, 65536)
            if not chunk:
                raise WorkerDied("the worker closed its output")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerDied(f"unreadable reply {line[:200]!r}") from None

    def close(self) -> None:
        self._selector.close()


class _Worker:
    """One running ``warm_worker.py`` process."""

    def __init__(self, interpreter: Path, env: dict[str, str], start_timeout: float) -> None:
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [str(interpreter), str(WORKER_SCRIPT), "torch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=tempfile.gettempdir(),
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._lines = _Lines(self.proc.stdout)
        try:
            hello = self._lines.read(start_timeout)
        except WorkerDied:
            hello = {"ready": False, "error": self._last_stderr_line() or "it exited"}
        if hello is None:
            hello = {"ready": False, "error": f"no answer within {start_timeout:g}s"}
        if not hello.get("ready"):
            self.stop()
            raise WorkerDied(str(hello.get("error") or "it did not start"))

    def _last_stderr_line(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, request: dict) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(f"cannot send a request: {exc}") from None

    def read(self, timeout: float) -> dict | None:
        return self._lines.read(timeout)

    def stop(self) -> None:
        """Close stdin (the worker exits on EOF); kill it if it lingers."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _kill_group(self.proc.pid)
            self.proc.wait()
        self._lines.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class TestRunner:
    """Runs test files of one environment; one instance per environment per run, thread-safe.

    Warm runs are serialised (one worker, one test at a time); isolated runs may overlap.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        env: Environment,
        probe: Probe,
        *,
        device: str,
        isolated: bool = False,
        start_timeout: float = WORKER_START_TIMEOUT,
    ) -> None:
        self.env = env
        self.probe = probe
        self.device = device
        self.verdict = device_verdict(probe, device)
        self.extra_env, self.note = dict(self.verdict.env), self.verdict.note
        self.interpreter = env.interpreter
        self.start_timeout = start_timeout
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        # Why warm runs are off (None while they are on); torch-less envs gain nothing from it.
        self.fallback: str | None = None
        if isolated:
            self.fallback = "isolated runs requested"
        elif probe.torch is None:
            self.fallback = "torch is not installed, nothing to keep warm"
        elif probe.torch_npu_loads:
            # An NPU runtime imported before fork() is not known to be fork-safe.
            self.fallback = "torch_npu loads here; each test gets its own process"

    @property
    def isolated(self) -> bool:
        """True once tests run as separate processes (requested, or the worker is off)."""
        return self.fallback is not None

    @property
    def env_vars(self) -> dict[str, str]:
        """The variables this runner sets on top of the inherited environment."""
        return {k: redact(v) for k, v in {**self.env.env, **self.extra_env}.items()}

    def command(self, test: TestSpec) -> str:
        """``<interpreter with ~> <path> <args>`` as shown in the evidence."""
        return " ".join([display_path(self.interpreter), shlex.join([test.path, *test.args])])

    def run(
        self, worktree: Path, test: TestSpec, log_path: Path, timeout: float | None = None
    ) -> TestRun:
        """Run ``test`` from ``worktree``; output to ``log_path``; kill it after ``timeout`` s."""
        if not self.verdict.runnable:
            raise BackportError("env-unavailable", f"environment '{self.env.name}': {self.note}")
        require_interpreter(self.env)
        worktree = Path(worktree).resolve()
        if not worktree.is_dir():
            raise BackportError(
                "test-failed", f"cannot run {test.path}: worktree {worktree} does not exist"
            )
        timeout = self.env.timeout if timeout is None else timeout
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.fallback is None:
            with self._lock:
                result = self._run_warm(worktree, test, log_path, timeout)
            if result is not None:
                return result
        return self._run_isolated(worktree, test, log_path, timeout)

    def close(self) -> None:
        """Stop the warm worker, if one runs."""
        with self._lock:
            if self._worker is not None:
                self._worker.stop()
                self._worker = None

    def __enter__(self) -> TestRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- warm --------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Start the warm worker now (it imports torch), so the first test does not wait."""
        if self.verdict.runnable:
            with self._lock:
                self._ensure_worker()

    def _ensure_worker(self) -> _Worker | None:
        if self._worker is not None and not self._worker.alive():
            self._drop_worker("the warm worker exited")
        if self._worker is None and self.fallback is None:
            try:
                self._worker = _Worker(
                    self.interpreter, env_vars(self.env, self.extra_env), self.start_timeout
                )
            except (WorkerDied, OSError) as exc:
                self.fallback = redact(f"warm worker could not start: {exc}")
        return self._worker

    def _drop_worker(self, reason: str) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        self.fallback = redact(reason)

    def _run_warm(
        self, worktree: Path, test: TestSpec, log_path: Path, timeout: float
    ) -> TestRun | None:
        """A forked run; None when the worker is unusable (the caller then runs isolated)."""
        worker = self._ensure_worker()
        if worker is None:
            return None
        self._start_log(log_path, test)
        request = {
            "cwd": str(worktree),
            "path": str(worktree / test.path),
            "argv": [test.path, *test.args],
            "log": str(log_path.resolve()),
            "env": {},
        }
        start = time.monotonic()
        pid = None
        try:
            worker.send(request)
            hello = worker.read(REPLY_TIMEOUT)
            if hello is None or "pid" not in hello:
                raise WorkerDied("the worker did not start the test")
            pid = int(hello["pid"])
            reply = worker.read(max(timeout - (time.monotonic() - start), 0.0))
            if reply is None:  # timed out: kill the test's group, collect its status
                _kill_group(pid)
                if worker.read(REPLY_TIMEOUT) is None:
                    raise WorkerDied("the worker did not reap a killed test")
                return self._result(test, log_path, None, start, "warm", timed_out=timeout)
            return self._result(test, log_path, int(reply["exit_code"]), start, "warm")
        except (WorkerDied, KeyError, ValueError, TypeError) as exc:
            if pid is not None:
                _kill_group(pid)
            self._drop_worker(f"the warm worker failed: {exc}")
            return None

    # -- isolated ----------------------------------------------------------------------

    def _run_isolated(
        self, worktree: Path, test: TestSpec, log_path: Path, timeout: float
    ) -> TestRun:
        self._start_log(log_path, test)
        argv = [str(self.interpreter), test.path, *test.args]
        start = time.monotonic()
        with open(log_path, "ab") as log:
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=worktree,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env_vars(self.env, self.extra_env),
                    start_new_session=True,
                )
            except OSError as exc:
                raise BackportError(
                    "env-missing",
                    f"environment '{self.env.name}': cannot run "
                    f"{display_path(self.interpreter)}: {exc.strerror}",
                ) from None
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid)
                proc.wait()
                return self._result(test, log_path, None, start, "isolated", timed_out=timeout)
            finally:
                _kill_group(proc.pid)  # leftovers the test started in its group
        return self._result(test, log_path, code, start, "isolated")

    # -- shared ------------------------------------------------------------------------

    def _start_log(self, log_path: Path, test: TestSpec) -> None:
        # Logs may hold paths and output a maintainer would not publish: owner-only, like the journal.
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"$ {self.command(test)}\n")

    def _result(
        self,
        test: TestSpec,
        log_path: Path,
        exit_code: int | None,
        start: float,
        runner: str,
        *,
        timed_out: float | None = None,
    ) -> TestRun:
        duration = time.monotonic() - start
        summary = parse_summary(_read_tail(log_path))
        lines = summary.outcome(exit_code)
        if timed_out is not None:
            lines.append(f"timed out after {timed_out:g}s")
        return TestRun(
            path=test.path,
            command=self.command(test),
            exit_code=exit_code,
            ran=summary.ran,
            ok=exit_code == 0 and summary.ok is True and timed_out is None,
            summary=lines,
            duration=round(duration, 3),
            log=str(log_path),
            runner=runner,
            timed_out=timed_out is not None,
            env_vars=self.env_vars,
        )


def _read_tail(path: Path) -> str:
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(size - LOG_TAIL, 0))
        return handle.read().decode("utf-8", "replace")
