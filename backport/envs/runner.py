"""Run one test file in an environment: forked from a warm worker, or as its own process.

The warm worker (``scripts/warm_worker.py``) is one long-lived interpreter per environment that
imported torch once; every test is a fork of it, so a run skips the import cost.  When the
worker cannot start or dies, or ``isolated=True``, each test is ``python <path> <args>`` in a
fresh process.  Either way the test runs from the worktree root, in its own process group, with
its output in ``log_path``, and a timeout kills the whole group.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from backport.config.model import Environment, TestSpec
from backport.config.validate import home_shown
from backport.envs.device import device_verdict
from backport.envs.fingerprint import FingerprintError, fingerprint
from backport.envs.kept import KeepPolicy, KeptUnavailable, connect_or_start
from backport.envs.launch import launch_argv, shown_command
from backport.envs.model import Probe, TestRun
from backport.envs.probe import SCRIPTS_DIR, env_vars, require_interpreter
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

    def __init__(self, fd: int) -> None:
        self._fd = fd
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
    """One running ``warm_worker.py`` process; many requests may be in flight at once.

    A reader thread routes each reply to the request it answers (by ``id``).
    """

    def __init__(
        self, launch: list[str], env: dict[str, str], start_timeout: float, *, learn: bool,
        load_check: float | None = None,
    ) -> None:
        self._stderr: IO[bytes] | None = tempfile.TemporaryFile()
        # The worker's scratch folder is ours, so it goes even when the worker is killed.
        self.spool: Path | None = Path(tempfile.mkdtemp(prefix="backport-warm-"))
        argv = [*launch, str(WORKER_SCRIPT), "torch", "--spool", str(self.spool)]
        if not learn:
            argv.append("--no-learn")
        if load_check is not None:
            argv += ["--load-check", f"{load_check:g}"]
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=tempfile.gettempdir(),
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.sock: socket.socket | None = None
        self.kept: dict | None = None  # the kept worker's hello (pid, started) when kept
        self._setup(self.proc.stdout.fileno())
        try:
            hello = self._lines.read(start_timeout)
        except WorkerDied:
            hello = {"ready": False, "error": self._last_stderr_line() or "it exited"}
        if hello is None:
            hello = {"ready": False, "error": f"no answer within {start_timeout:g}s"}
        if not hello.get("ready"):
            self.stop()
            raise WorkerDied(str(hello.get("error") or "it did not start"))
        self.pid = int(self.proc.pid)
        self.load_check: dict | None = hello.get("load_check")  # see probe_env.load_check
        self._start_reader()

    @classmethod
    def attach(cls, sock: socket.socket, hello: dict) -> _Worker:
        """A client of the kept worker behind ``sock`` (its hello already read)."""
        self = cls.__new__(cls)
        self._stderr = None
        self.spool = None  # the kept worker's, removed by whoever replaces or stops it
        self.proc = None
        self.sock = sock
        self.kept = hello
        self.pid = int(hello.get("pid") or 0)
        self.load_check = hello.get("load_check")  # only from a worker this run started
        self._setup(sock.fileno())
        self._start_reader()
        return self

    def _setup(self, read_fd: int) -> None:
        self._lines = _Lines(read_fd)
        self._send_lock = threading.Lock()  # one writer at a time
        self._waiters_lock = threading.Lock()
        self._waiters: dict[int, queue.Queue[dict | None]] = {}
        self._ids = itertools.count(1)
        self.retired: str | None = None  # why the worker stopped forking, once it says so
        self.gone: str | None = None  # why the worker's output ended

    def _start_reader(self) -> None:
        self._reader = threading.Thread(target=self._read_replies, daemon=True,
                                        name=f"warm-worker-{self.pid}")
        self._reader.start()

    def _last_stderr_line(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else ""

    def _read_replies(self) -> None:
        try:
            while True:
                message = self._lines.read(3600.0)
                if message is None:
                    continue
                if "retire" in message:
                    self.retired = str(message["retire"])
                    continue
                with self._waiters_lock:
                    waiter = self._waiters.get(message.get("id"))  # type: ignore[arg-type]
                if waiter is not None:
                    waiter.put(message)
        except (WorkerDied, OSError, ValueError) as exc:
            self.gone = str(exc)
        finally:
            self.gone = self.gone or "the worker closed its output"
            with self._waiters_lock:
                waiters = list(self._waiters.values())
            for waiter in waiters:
                waiter.put(None)

    def alive(self) -> bool:
        return (self.proc is None or self.proc.poll() is None) and self.gone is None

    def submit(self, request: dict) -> tuple[int, queue.Queue[dict | None]]:
        """Send ``request``; its replies arrive on the returned queue (None: the worker died)."""
        waiter: queue.Queue[dict | None] = queue.Queue()
        with self._waiters_lock:
            rid = next(self._ids)
            self._waiters[rid] = waiter
        line = (json.dumps({**request, "id": rid}) + "\n").encode("utf-8")
        try:
            with self._send_lock:
                if self.sock is not None:
                    self.sock.sendall(line)
                else:
                    assert self.proc is not None and self.proc.stdin is not None
                    self.proc.stdin.write(line)
                    self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            self.done(rid)
            raise WorkerDied(f"cannot send a request: {exc}") from None
        if self.gone is not None:
            waiter.put(None)
        return rid, waiter

    def done(self, rid: int) -> None:
        with self._waiters_lock:
            self._waiters.pop(rid, None)

    def stop(self, wait: float = 5.0) -> None:
        """Close stdin (the worker exits on EOF once its children end); kill it if it lingers.

        A kept worker's client only disconnects; the worker waits for the next run.
        """
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            reader = getattr(self, "_reader", None)
            if reader is not None:
                reader.join(5)
            self._lines.close()
            self.sock.close()
            return
        assert self.proc is not None
        try:
            if self.proc.stdin is not None:
                with self._send_lock:
                    self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            _kill_group(self.proc.pid)
            self.proc.wait()
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.join(5)
        self._lines.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
        if self.spool is not None:
            shutil.rmtree(self.spool, ignore_errors=True)


def _start_worker(
    env: Environment, extra_env: dict[str, str], start_timeout: float, *, learn: bool,
    keep: KeepPolicy | None = None, load_check: float | None = None,
) -> _Worker:
    """Launch ``env``'s warm worker with ``extra_env`` on top of its variables (through its
    ``source:`` script and ``wrapper:``, like every test).

    With ``keep`` (and ``learn``), connect to the kept worker of this launch instead, started
    if none runs; when that is not possible, a private worker is started as without it. An
    environment with a ``source:`` script always gets a private worker: what the script exports
    depends on the environment of the run that sources it, which a kept worker's children,
    given the client's environment, would not see.
    With ``load_check``, a worker started now also runs the probe's torch_npu load check.
    """
    variables = {**env.env, **extra_env}
    launch = launch_argv(env, [], variables)
    if keep is not None and learn and env.source is None:
        try:
            sock, hello = connect_or_start(keep, launch, WORKER_SCRIPT, variables,
                                           env_vars(env, extra_env), fingerprint(env),
                                           start_timeout, load_check)
            return _Worker.attach(sock, hello)
        except (KeptUnavailable, FingerprintError, OSError):
            pass
    return _Worker(launch, env_vars(env, extra_env), start_timeout, learn=learn,
                   load_check=load_check)


class EarlyWorker:
    """A warm worker started before the probe ends, on a guess of the variables tests get.

    The guess is the probe's usual verdict on a CPU machine: torch_npu installed but not
    loadable, so tests run with torch_npu's backend autoload off (which also keeps an
    installed torch_npu out of the worker). The runner adopts it only when the verdict
    gives exactly these variables; otherwise it is stopped unused.

    With ``load_check`` (seconds) the worker, if started now, runs the probe's torch_npu load
    check in a fork right after importing torch (:meth:`load_check_result`), so a cold run
    imports torch once per environment, not once for the probe and once for the worker.
    """

    def __init__(self, env: Environment, extra_env: dict[str, str],
                 start_timeout: float = WORKER_START_TIMEOUT, *,
                 keep: KeepPolicy | None = None, load_check: float | None = None) -> None:
        self.env = env
        self.keep = keep
        self.load_check = load_check
        self.extra_env = dict(extra_env)
        self._worker: _Worker | None = None
        self._checked: dict | None = None
        self._error: str | None = None
        self._thread = threading.Thread(target=self._start, args=(start_timeout,),
                                        name=f"early-worker-{env.name}", daemon=True)
        self._thread.start()

    def _start(self, start_timeout: float) -> None:
        try:
            self._worker = _start_worker(self.env, self.extra_env, start_timeout, learn=True,
                                         keep=self.keep, load_check=self.load_check)
            self._checked = self._worker.load_check
        except (WorkerDied, OSError) as exc:
            self._error = str(exc)

    def load_check_result(self) -> dict | None:
        """The load check the worker ran at its start (once it started); None when it did not
        run one (asked not to, attached to a worker an earlier run started, failed to start)."""
        self._thread.join()
        return self._checked

    def take(self, extra_env: dict[str, str]) -> _Worker | None:
        """The started worker if it runs with ``extra_env``; else None (and it is stopped)."""
        self._thread.join()
        worker, self._worker = self._worker, None
        if worker is not None and (extra_env != self.extra_env or not worker.alive()):
            worker.stop()
            worker = None
        return worker

    def discard(self) -> None:
        """Stop it unused (in the background when it is still starting)."""
        if self._thread.is_alive():
            threading.Thread(target=self.take, args=({"discard": "-"},), daemon=True).start()
        else:
            self.take({"discard": "-"})


def _reply(waiter: queue.Queue[dict | None], timeout: float) -> dict | None:
    """The next reply, None on timeout; WorkerDied when the worker went away."""
    try:
        message = waiter.get(timeout=max(timeout, 0.0))
    except queue.Empty:
        return None
    if message is None:
        raise WorkerDied("the worker went away")
    return message


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class TestRunner:
    """Runs test files of one environment; one instance per environment per run, thread-safe.

    Runs overlap as the callers' threads ask: warm runs are concurrent children of one
    worker, isolated runs separate processes.
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
        early: EarlyWorker | None = None,
        keep: KeepPolicy | None = None,
    ) -> None:
        self.env = env
        self._keep = keep  # kept workers on (None: this run's own worker only)
        self.probe = probe
        self.device = device
        self.verdict = device_verdict(probe, device)
        self.extra_env, self.note = dict(self.verdict.env), self.verdict.note
        self.interpreter = env.interpreter
        self.start_timeout = start_timeout
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._retired: list[_Worker] = []  # replaced workers finishing their running tests
        self._learn = True  # off once a worker retired: its successor only imports torch
        # Why warm runs are off (None while they are on); torch-less envs gain nothing from it.
        self.fallback: str | None = None
        if isolated:
            self.fallback = "isolated runs requested"
        elif probe.torch is None:
            self.fallback = "torch is not installed, nothing to keep warm"
        elif env.wrapper:
            self.fallback = "the wrapper starts each test"
        elif probe.torch_npu_loads:
            # An NPU runtime imported before fork() is not known to be fork-safe.
            self.fallback = "torch_npu loads here; each test gets its own process"
        self._early = early if self.fallback is None and self.verdict.runnable else None
        if early is not None and self._early is None:
            early.discard()

    @property
    def isolated(self) -> bool:
        """True once tests run as separate processes (requested, or the worker is off)."""
        return self.fallback is not None

    @property
    def kind(self) -> str:
        """How tests run, for the verbose log: isolated, or forked from which worker."""
        if self.isolated:
            return "isolated"
        worker = self._worker
        if worker is None or worker.kept is None:
            return "warm worker"
        when = "started now" if worker.kept.get("started") else "kept from an earlier run"
        return f"warm worker, kept, pid {worker.pid}, {when}"

    @property
    def worker_pid(self) -> int | None:
        """The pid of the worker tests fork from (None: none yet, or isolated)."""
        worker = self._worker
        return worker.pid if worker is not None else None

    @property
    def env_vars(self) -> dict[str, str]:
        """The variables this runner sets on top of the inherited environment."""
        return {k: redact(v) for k, v in {**self.env.env, **self.extra_env}.items()}

    def command(self, test: TestSpec) -> str:
        """The test's start as the evidence shows it: source script, the variables this runner
        sets, wrapper or ``python``, the worktree-relative path and args (see ``launch``)."""
        return shown_command(self.env, [test.path, *test.args], self.env_vars)

    def _launch(self, args: list[str]) -> list[str]:
        return launch_argv(self.env, args, {**self.env.env, **self.extra_env})

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
            result = self._run_warm(worktree, test, log_path, timeout)
            if result is not None:
                return result
        return self._run_isolated(worktree, test, log_path, timeout)

    def close(self) -> None:
        """Stop the warm worker, if one runs."""
        with self._lock:
            workers = [*self._retired, *([self._worker] if self._worker else [])]
            self._worker, self._retired = None, []
            early, self._early = self._early, None
        if early is not None:
            early.discard()
        for worker in workers:
            worker.stop()

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
        """The usable worker, started (or replaced, if it retired) as needed; call under the lock."""
        if self._worker is not None and not self._worker.alive():
            if self._worker.kept is not None:
                # A kept worker died (or was told to go): this run starts its own.
                threading.Thread(target=self._worker.stop, daemon=True).start()
                self._worker, self._keep = None, None
            else:
                self._drop_worker("the warm worker exited")
        if self._worker is not None and self._worker.retired is not None:
            # It stopped forking; let it finish its running tests, start a plain one.
            self._retired.append(self._worker)
            self._worker = None
            self._learn = False
        if self._worker is None and self._early is not None:
            early, self._early = self._early, None
            self._worker = early.take(self.extra_env)
        if self._worker is None and self.fallback is None:
            try:
                self._worker = _start_worker(
                    self.env, self.extra_env, self.start_timeout, learn=self._learn,
                    keep=self._keep,
                )
            except (WorkerDied, OSError) as exc:
                self.fallback = redact(f"warm worker could not start: {exc}")
        return self._worker

    def _drop_worker(self, reason: str, worker: _Worker | None = None) -> None:
        """Stop ``worker`` (the current one by default); tests run isolated from now on."""
        worker = worker or self._worker
        if worker is not None and worker is self._worker:
            self._worker = None
            threading.Thread(target=worker.stop, daemon=True).start()  # it may have tests running
        if self.fallback is None:
            self.fallback = redact(reason)

    def _run_warm(
        self, worktree: Path, test: TestSpec, log_path: Path, timeout: float
    ) -> TestRun | None:
        """A forked run; None when the worker is unusable (the caller then runs isolated)."""
        request = {
            "cwd": str(worktree),
            "path": str(worktree / test.path),
            "argv": [test.path, *test.args],
            "log": str(log_path.resolve()),
            "env": {},
        }
        for _attempt in range(3):  # again on a fresh worker if one retired or a kept one died
            with self._lock:
                worker = self._ensure_worker()
            if worker is None:
                return None
            self._start_log(log_path, test)
            start = time.monotonic()
            pid = rid = None
            try:
                # A kept worker was started by some earlier run: give the test this run's
                # environment, as a process of its own would get it.
                sent = request if worker.kept is None else {
                    **request, "environ": env_vars(self.env, self.extra_env)}
                rid, waiter = worker.submit(sent)
                # Before it forks, the worker imports what earlier tests taught it: an import
                # like its own start, as slow on a busy machine, so it gets the start's time.
                hello = _reply(waiter, self.start_timeout)
                if hello is not None and "retired" in hello:
                    worker.retired = worker.retired or str(hello["retired"])
                    continue
                if hello is None or "pid" not in hello:
                    raise WorkerDied("the worker did not start the test")
                pid = int(hello["pid"])
                # The test's time starts when its child exists: a worker first imports what
                # earlier tests taught it, and that wait is not the test's.
                start = time.monotonic()
                reply = _reply(waiter, timeout)
                if reply is None:  # timed out: kill the test's group, collect its status
                    _kill_group(pid)
                    if _reply(waiter, REPLY_TIMEOUT) is None:
                        raise WorkerDied("the worker did not reap a killed test")
                    return self._result(test, log_path, None, start, "warm", timed_out=timeout)
                return self._result(test, log_path, int(reply["exit_code"]), start, "warm")
            except (WorkerDied, KeyError, ValueError, TypeError) as exc:
                if pid is not None:
                    _kill_group(pid)
                with self._lock:
                    if worker.kept is not None:
                        # A kept worker crashed or went stale: this run starts its own.
                        if worker is self._worker:
                            self._worker = None
                            threading.Thread(target=worker.stop, daemon=True).start()
                        self._keep = None
                        continue
                    self._drop_worker(f"the warm worker failed: {exc}", worker)
                return None
            finally:
                if rid is not None:
                    worker.done(rid)
        return None

    # -- isolated ----------------------------------------------------------------------

    def _run_isolated(
        self, worktree: Path, test: TestSpec, log_path: Path, timeout: float
    ) -> TestRun:
        self._start_log(log_path, test)
        argv = self._launch([test.path, *test.args])
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
                    f"{home_shown(str(self.interpreter))}: {exc.strerror}",
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
