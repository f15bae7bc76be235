"""The one place child processes start: argv lists, stdin bytes, output captured, a timeout
that kills the whole process group, one error sentence for a program that cannot start.

:func:`run` waits for the child (git's runner too), :func:`spawn` returns it running. Each child
leads a process group, ended with the run (:func:`kill_running`). No child gets a secret of the
tool in its environment (:func:`secret_free`); git's runner lays its own variables over it
(``unfiltered``): the push's askpass is the one way a token reaches a child.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from subprocess import DEVNULL, PIPE, STDOUT, Popen, TimeoutExpired
from typing import IO

from backport.errors import BackportError, ErrorCode
from backport.redact import redact, registered

Stream = int | IO[bytes] | None
# The variables the tool reads its forge token from: never passed to a child.
SECRET_VARS = ("GITCODE_TOKEN", "BACKPORT_TOKEN")

# Process groups of `run` children still running; an interrupted run kills them on its way out.
_running: set[int] = set()
_running_changed = threading.Condition()  # its lock guards ``_running``; notified as it changes
_starting = [0]  # children being started, not in ``_running`` yet
# Seconds an interrupted child has to end on SIGTERM (a SIGKILLed git leaves its lock files).
STOP_GRACE = 5.0


@dataclass(frozen=True)
class Output:
    """How one child process ended and what it printed."""

    returncode: int | None  # None: killed when its time ran out
    stdout: bytes = b""  # b"" when it went elsewhere (a log file)
    stderr: bytes = b""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def out(self) -> str:  # bytes that are not UTF-8 replaced
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


def secret_free(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without :data:`SECRET_VARS` and every variable holding a registered secret."""
    secrets = registered()
    return {k: v for k, v in environ.items()
            if k not in SECRET_VARS and not any(secret in v for secret in secrets)}


def spawn(argv: Sequence[str], *, cwd: Path | str | None = None,
          env: Mapping[str, str] | None = None, stdin: Stream = DEVNULL,
          stdout: Stream = PIPE, stderr: Stream = PIPE, code: ErrorCode | str = ErrorCode.INTERNAL,
          context: str = "", shown: str | None = None, pass_fds: Sequence[int] = (),
          unfiltered: Mapping[str, str] | None = None) -> Popen[bytes]:
    """Start ``argv`` in a group of its own: ``env`` (None: this process's) less the secrets,
    ``unfiltered`` laid over it."""
    child_env = {**secret_free(os.environ if env is None else env), **(unfiltered or {})}
    try:
        return Popen(list(argv), cwd=cwd, env=child_env,
                                stdin=stdin, stdout=stdout, stderr=stderr,
                                start_new_session=True, pass_fds=tuple(pass_fds))
    except OSError as exc:  # one sentence: <context>cannot run <shown>: <why>
        message = f"{context}cannot run {shown or argv[0]}: {exc.strerror or exc}"
        raise BackportError(code, redact(message)) from None


def run(argv: Sequence[str], *, cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None, stdin: bytes | None = None,
        timeout: float | None = None, stdout: Stream = PIPE, merge_stderr: bool = False,
        reap: bool = False, code: ErrorCode | str = ErrorCode.INTERNAL, context: str = "",
        shown: str | None = None, pass_fds: Sequence[int] = (),
        unfiltered: Mapping[str, str] | None = None) -> Output:
    """Run ``argv`` to its end (a non-zero exit is no error). ``stdout`` is captured unless a
    file is given, ``merge_stderr`` sends stderr there too. After ``timeout`` seconds the group
    is killed (``returncode`` None); ``reap`` kills what the child left in it after a normal end."""
    with _running_changed:
        _starting[0] += 1  # an interrupt's `kill_running` waits for the child to be counted
    try:
        proc = spawn(argv, cwd=cwd, env=env, stdin=DEVNULL if stdin is None else PIPE,
                     stdout=stdout, stderr=STDOUT if merge_stderr else PIPE, code=code,
                     context=context, shown=shown, pass_fds=pass_fds, unfiltered=unfiltered)
        with _running_changed:
            _running.add(proc.pid)
    finally:
        with _running_changed:
            _starting[0] -= 1
            _running_changed.notify_all()
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except TimeoutExpired:
        stop_group(proc)
        return Output(None)
    except BaseException:
        stop_group(proc)
        raise
    finally:
        for pipe in filter(None, (proc.stdout, proc.stderr)):
            pipe.close()
        if reap:
            kill_group(proc.pid)
        with _running_changed:
            _running.discard(proc.pid)
            _running_changed.notify_all()
    return Output(proc.returncode, out or b"", err or b"")


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to a process group (gone already or not ours: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_group(proc: Popen[bytes]) -> None:
    """End the group ``proc`` leads: SIGTERM, :data:`STOP_GRACE` seconds, SIGKILL; reaped."""
    kill_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutExpired):
        proc.wait(timeout=STOP_GRACE)
    kill_group(proc.pid)
    proc.wait()


def kill_running() -> None:
    """End every child :func:`run` waits on (an interrupted run): SIGTERM, then SIGKILL."""
    with _running_changed:
        _running_changed.wait_for(lambda: not _starting[0], timeout=STOP_GRACE)
        groups = list(_running)
    for pgid in groups:
        kill_group(pgid, signal.SIGTERM)
    with _running_changed:
        _running_changed.wait_for(lambda: not _running.intersection(groups), timeout=STOP_GRACE)
    for pgid in groups:
        kill_group(pgid)
