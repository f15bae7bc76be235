"""A warm test worker: import torch once, then fork one child per test file.

Run by ``backport`` with an environment's interpreter in the run's sandbox; standard library
only, Python 3.8+. ``warm_worker.py MODULE... [--load-check SECONDS]``

JSON lines: first ``{"ready": true}`` or ``{"ready": false, "error"}``. A request ``{"id",
"cwd", "path", "argv", "log"[, "confine"]}`` is answered ``{"id", "pid"}`` once the child (its
own process group) exists, then ``{"id", "exit_code"}`` (``-signal`` when killed); ``{"kill":
PID}`` kills that group; EOF stops the worker once its children ended. Every child starts from
the same state: what one imports or changes dies with it. ``--load-check``:
``probe_env.run_load_check`` runs after the imports; the ready line has it (``"load_check"``).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import json
import os
import runpy
import selectors
import signal
import sys
import traceback
from typing import Any

_confine: Any = None  # sandbox_init.confine, loaded by the worker before the first fork


def child(request: dict, private: list) -> int:
    """Run one test file as ``__main__`` in this forked process; return its exit code."""
    for fd in private:
        os.close(fd)
    sys.stdin = open(os.devnull)  # drop whatever the protocol reader had buffered
    os.dup2(sys.stdin.fileno(), 0)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    if request.get("confine"):  # the test's own mounts, before any of its code runs
        _confine(request["confine"])
    os.chdir(request["cwd"])
    path = request["path"]
    if not os.path.isfile(path):  # what `python missing.py` says and does
        sys.stderr.write(f"{sys.executable}: can't open file {path!r}: "
                         "[Errno 2] No such file or directory\n")
        return 2
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        sys.stderr.write(f"{exc.code}\n")
        return 1
    except BaseException:  # noqa: B036 - the test's own crash is its result
        traceback.print_exc()
        return 1
    return 0


def read_requests(buffer: bytes) -> tuple[list | None, bytes]:
    """The complete request lines on stdin, and the rest; None at EOF."""
    try:
        chunk = os.read(0, 65536)
    except OSError as exc:
        return ([] if exc.errno in (errno.EAGAIN, errno.EINTR) else None), buffer
    if not chunk:
        return None, buffer
    *lines, rest = (buffer + chunk).split(b"\n")
    return [json.loads(line) for line in lines if line.strip()], rest


class Worker:
    """Forks children on request and reaps them."""

    def __init__(self, proto: int) -> None:
        self.children: dict = {}  # pid -> request id
        self.proto = proto
        self.wake = (-1, -1)

    def send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode("utf-8")
        with contextlib.suppress(OSError):  # the client went away
            while data:
                data = data[os.write(self.proto, data):]

    def fork(self, request: dict) -> int:
        global _confine
        if request.get("confine") and _confine is None:
            here = os.path.dirname(os.path.abspath(__file__))
            _confine = runpy.run_path(os.path.join(here, "sandbox_init.py"))["confine"]
        private = sorted({fd for fd in (self.proto, *self.wake) if fd > 2})  # the child's not
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setpgid(0, 0)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.set_wakeup_fd(-1)
                code = child(request, private)
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code & 0xFF)
        with contextlib.suppress(OSError):  # also here, so the group exists before we report it
            os.setpgid(pid, pid)
        return pid

    def handle(self, request: dict) -> None:
        if "kill" in request:  # a test ran out of time: end its group
            if request["kill"] in self.children:
                with contextlib.suppress(OSError):
                    os.killpg(request["kill"], signal.SIGKILL)
            return
        pid = self.fork(request)
        self.children[pid] = request.get("id")
        self.send({"id": request.get("id"), "pid": pid})

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid not in self.children:
                continue
            rid = self.children.pop(pid)
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            self.send({"id": rid, "exit_code": code})

    def serve(self) -> None:
        """Answer requests until stdin ends, then until the running children have ended."""
        wake_r, wake_w = os.pipe()
        self.wake = (wake_r, wake_w)
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        selector = selectors.DefaultSelector()
        selector.register(wake_r, selectors.EVENT_READ)
        selector.register(0, selectors.EVENT_READ)
        reading, buffer = True, b""
        while reading or self.children:
            for key, _ in selector.select():
                if key.fd == wake_r:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(wake_r, 512):
                            pass
                    continue
                requests, buffer = read_requests(buffer)
                if requests is None:
                    selector.unregister(0)
                    reading = False
                for request in requests or ():
                    self.handle(request)
            self.reap()
        selector.close()


def main(args: list) -> int:
    check_timeout = ""
    if "--load-check" in args[:-1]:
        at = args.index("--load-check")
        check_timeout, args = args[at + 1], args[:at] + args[at + 2:]
    # The protocol gets a private copy of stdout; stray prints (from imports) go to stderr.
    proto = os.dup(1)
    os.dup2(2, 1)
    try:
        for name in args:
            importlib.import_module(name)
    except BaseException as exc:  # noqa: B036 - report why, then stop
        cause = exc.__cause__ or exc
        message = f"{type(cause).__name__}: {cause}"
        os.write(proto, (json.dumps({"ready": False, "error": message}) + "\n").encode())
        return 1
    gc.collect()
    gc.freeze()  # keep the collector off the imported objects: fewer copy-on-write faults
    hello: dict = {"ready": True}
    if check_timeout:
        here = os.path.dirname(os.path.abspath(__file__))
        check = runpy.run_path(os.path.join(here, "probe_env.py"))["run_load_check"]
        hello["load_check"] = check(float(check_timeout), preloaded=True)
    worker = Worker(proto)
    worker.send(hello)
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
