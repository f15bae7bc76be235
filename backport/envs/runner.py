"""Run one test file in an environment: forked from the run's warm worker, or as its own process.

A fork of the warm worker (torch imported once) where it can be; else (isolated runs asked for,
a wrapper, no torch, a torch_npu that loads, a failed worker, an overlay) ``python <path>``
started afresh in the test's sandbox view. Either way from the worktree root, in its own
process group, its output in an owner-only log, killed at its timeout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from backport import process
from backport.config.model import Environment, TestSpec
from backport.config.validate import home_as_tilde
from backport.envs.launch import (
    PATH_FIRST,
    launch_argv,
    local_path,
    placeholder,
    script_args,
    shown_command,
)
from backport.envs.model import Probe, TestRun
from backport.envs.probe import device_verdict, env_vars, require_interpreter
from backport.envs.sandbox import PID_NAMESPACE, sandboxed, test_view
from backport.envs.summary import parse_summary
from backport.envs.worker import WORKER_START_TIMEOUT, EarlyWorker, Worker, WorkerDied, next_reply
from backport.errors import BackportError
from backport.redact import redact

OVERLAY_SHOWN = "<torch_npu overlay>"
REPLY_TIMEOUT = 30.0  # for protocol replies that need no test to run
LOG_TAIL = 4 * 1024 * 1024  # the summary is at the end


def static_fallback(env: Environment, isolated: bool) -> str | None:
    """Why ``env``'s tests never fork from a warm worker, whatever its probe says (None: they may)."""
    if isolated:
        return "isolated runs requested"
    if env.wrapper:
        return "the wrapper starts each test"
    return None


class TestRunner:
    """Runs test files of one environment and device policy; one per run, thread-safe."""

    __test__ = False  # not a pytest test class

    def __init__(self, env: Environment, probe: Probe, *, device: str, isolated: bool = False,
                 early: EarlyWorker | None = None) -> None:
        self.env = env
        self.verdict = device_verdict(probe, device)
        self.extra_env, self.note = dict(self.verdict.env), self.verdict.note
        self._lock = threading.Lock()
        self._worker: Worker | None = None
        self.fallback: str | None = static_fallback(env, isolated)
        if self.fallback is None and probe.torch is None:
            self.fallback = "torch is not installed, nothing to keep warm"
        elif self.fallback is None and probe.torch_npu_loads:
            # An NPU runtime imported before fork() is not known to be fork-safe.
            self.fallback = "torch_npu loads here; each test gets its own process"
        self._early = early if self.fallback is None and self.verdict.runnable else None
        if early is not None and self._early is None:
            early.discard()

    @property
    def kind(self) -> str:
        """How tests run now: "isolated" once the worker is off (requested or failed)."""
        return "isolated" if self.fallback is not None else "warm worker"

    @property
    def env_vars(self) -> dict[str, str]:
        """The variables this runner sets on top of the inherited environment."""
        return {k: redact(v) for k, v in {**self.env.env, **self.extra_env}.items()}

    def command(self, test: TestSpec, overlay: Path | None = None) -> str:
        return shown_command(self.env, script_args(test.path, test.args), self._shown_vars(overlay))

    def _shown_vars(self, overlay: Path | None) -> dict[str, str]:
        if overlay is None:
            return self.env_vars
        pinned = self.env_vars.get("PYTHONPATH")
        if pinned is not None and local_path(pinned):
            pinned = placeholder("PYTHONPATH")
        shown = os.pathsep.join([OVERLAY_SHOWN, *([pinned] if pinned else [])])
        return {**self.env_vars, "PYTHONPATH": shown}

    def _overlay_vars(self, overlay: Path | None) -> dict[str, str]:
        """What puts ``overlay`` first on ``PYTHONPATH``, also after a ``source:`` script."""
        if overlay is None:
            return {}
        if self.env.source is not None and "PYTHONPATH" not in self.env.env:
            return {PATH_FIRST: str(overlay)}
        before = {**os.environ, **self.env.env}.get("PYTHONPATH")
        return {"PYTHONPATH": os.pathsep.join([str(overlay), *([before] if before else [])])}

    def run(
        self, worktree: Path, test: TestSpec, log_path: Path, timeout: float | None = None,
        *, overlay: Path | None = None,
    ) -> TestRun:
        """Run ``test`` from ``worktree``, output to ``log_path``, killed after ``timeout`` s."""
        if not self.verdict.runnable:
            raise BackportError("env-unavailable", f"environment '{self.env.name}': {self.note}")
        require_interpreter(self.env)
        worktree = worktree.resolve()
        if not worktree.is_dir():
            raise BackportError("test-failed",
                                f"cannot run {test.path}: worktree {worktree} does not exist")
        timeout = self.env.timeout if timeout is None else timeout
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.fallback is None and overlay is None:
            # the forked test writes a temporary file (sandbox-writable), added to its log after
            with tempfile.TemporaryDirectory(prefix="backport-test-") as scratch:
                result = self._run_forked(worktree, test, log_path, timeout,
                                          Path(scratch) / "test.log")
            if result is not None:
                return result
        return self._run_isolated(worktree, test, log_path, timeout, overlay)

    def close(self) -> None:
        with self._lock:
            worker, self._worker = self._worker, None
            early, self._early = self._early, None
        if early is not None:
            early.discard()
        if worker is not None:
            worker.stop()

    def __enter__(self) -> TestRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warm_up(self) -> None:
        """Start the warm worker now, so the first test does not wait for torch."""
        if self.verdict.runnable:
            with self._lock:
                self._ensure_worker()

    def _ensure_worker(self) -> Worker | None:
        """The usable worker, adopted or started when none is; call under the lock."""
        if self._worker is not None and not self._worker.alive():
            self._drop_worker("the warm worker exited")
        if self._worker is None and self._early is not None:
            early, self._early = self._early, None
            self._worker = early.take(self.extra_env)
        if self._worker is None and self.fallback is None:
            try:
                self._worker = Worker(self.env, self.extra_env)
            except (WorkerDied, OSError) as exc:
                self.fallback = redact(f"warm worker could not start: {exc}")
        return self._worker

    def _drop_worker(self, reason: str, worker: Worker | None = None) -> None:
        """Stop ``worker`` (default: the current one); tests run isolated from now on."""
        worker = worker or self._worker
        if worker is not None and worker is self._worker:
            self._worker = None
            threading.Thread(target=worker.stop, daemon=True).start()  # it may have tests running
        if self.fallback is None:
            self.fallback = redact(reason)

    def _run_forked(
        self, worktree: Path, test: TestSpec, log_path: Path, timeout: float, scratch: Path
    ) -> TestRun | None:
        """A run forked from the warm worker; None when the worker is unusable."""
        with self._lock:
            worker = self._ensure_worker()
        if worker is None:
            return None
        request = {"cwd": str(worktree), "path": str(worktree / test.path),
                   "argv": [test.path, *test.args], "log": str(scratch)}
        if worker.isolation == PID_NAMESPACE:  # the test's own mounts, set by its child
            request["confine"] = test_view(worktree, self._reads())
        self._start_log(log_path, test)
        scratch.touch()
        pid = rid = None
        try:
            rid, waiter = worker.submit(request)
            hello = next_reply(waiter, WORKER_START_TIMEOUT)
            if hello is None or "pid" not in hello:
                raise WorkerDied("the worker did not start the test")
            pid = int(hello["pid"])
            start = time.monotonic()  # the test's time starts when its child exists
            reply = next_reply(waiter, timeout)
            if reply is None:  # timed out: kill the test's group, collect its status
                worker.kill(pid)
                if next_reply(waiter, REPLY_TIMEOUT) is None:
                    raise WorkerDied("the worker did not reap a killed test")
                _append(scratch, log_path)
                return self._result(test, log_path, None, start, "warm", worker.isolation,
                                    timeout)
            _append(scratch, log_path)
            return self._result(test, log_path, int(reply["exit_code"]), start, "warm",
                                worker.isolation)
        except (WorkerDied, KeyError, ValueError, TypeError) as exc:
            if pid is not None:
                worker.kill(pid)
            with self._lock:
                self._drop_worker(f"the warm worker failed: {exc}", worker)
            return None
        finally:
            if rid is not None:
                worker.done(rid)

    def _run_isolated(
        self, worktree: Path, test: TestSpec, log_path: Path, timeout: float,
        overlay: Path | None = None,
    ) -> TestRun:
        self._start_log(log_path, test, overlay)
        variables = {**self.extra_env, **self._overlay_vars(overlay)}
        pinned = {k: v for k, v in variables.items() if k != PATH_FIRST}
        argv = launch_argv(self.env, script_args(test.path, test.args), {**self.env.env, **pinned})
        launch = sandboxed(argv, view=test_view(worktree, self._reads(overlay)))
        start = time.monotonic()
        with open(log_path, "ab") as log:
            done = process.run(launch.argv, cwd=worktree, env=env_vars(self.env, variables),
                               stdout=log, merge_stderr=True, timeout=timeout, reap=True,
                               code="env-missing", context=f"environment '{self.env.name}': ",
                               shown=home_as_tilde(str(self.env.interpreter)),
                               pass_fds=launch.pass_fds)
        return self._result(test, log_path, None if done.timed_out else done.returncode, start,
                            "isolated", launch.isolation, timeout if done.timed_out else None,
                            overlay)

    def _reads(self, overlay: Path | None = None) -> list[str]:
        """What a test reads besides its worktree: venv, ``source:`` folder, wrapper, overlay."""
        found = [os.path.dirname(os.path.dirname(os.path.abspath(self.env.interpreter)))]
        if self.env.source is not None:
            found.append(str(self.env.source.parent))
        found += [word for word in self.env.wrapper if os.path.isabs(word)]
        if overlay is not None:
            found.append(str(overlay))
        return found

    def _start_log(self, log_path: Path, test: TestSpec, overlay: Path | None = None) -> None:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"$ {self.command(test, overlay)}\n")
            if overlay is not None:
                handle.write(f"# {OVERLAY_SHOWN}: {overlay}\n")

    def _result(
        self, test: TestSpec, log_path: Path, exit_code: int | None, start: float, runner: str,
        isolation: str, timed_out: float | None = None, overlay: Path | None = None,
    ) -> TestRun:
        duration = time.monotonic() - start
        summary = parse_summary(_read_tail(log_path))
        lines = summary.outcome(exit_code)
        if timed_out is not None:
            lines.append(f"timed out after {timed_out:g}s")
        return TestRun(
            path=test.path,
            command=self.command(test, overlay),
            exit_code=exit_code,
            ran=summary.ran,
            ok=exit_code == 0 and summary.ok is True and timed_out is None,
            summary=lines,
            duration=round(duration, 3),
            log=str(log_path),
            runner=runner,
            timed_out=timed_out is not None,
            env_vars=self._shown_vars(overlay),
            isolation=isolation,
        )


def _read_tail(path: Path) -> str:
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(size - LOG_TAIL, 0))
        return handle.read().decode("utf-8", "replace")


def _append(scratch: Path, log_path: Path) -> None:
    """Move what a forked test wrote to ``scratch`` into its log."""
    with open(scratch, "r+b") as src, open(log_path, "ab") as dst:
        shutil.copyfileobj(src, dst)
        src.truncate(0)
