"""A warm test worker: import torch once, then fork one child per test file.

Run by ``backport`` with an environment's interpreter in the run's sandbox; standard library
only, Python 3.8+. ``warm_worker.py MODULE... --reports DIR [--no-learn] [--load-check SECONDS]``

JSON lines: first ``{"ready": true, ...}`` or ``{"ready": false, "error"}``. A request ``{"id",
"cwd", "path", "argv", "log"[, "confine"]}`` is answered ``{"id", "pid"}`` once the child (its
own process group) exists, then ``{"id", "exit_code"}`` (``-signal`` when killed); ``{"kill":
PID}`` kills that group; EOF stops the worker once its children ended. Learning: each child
reports the stdlib/site-packages modules it imported (never the worktree's, never one that read
``sys.argv``) and the worker imports them before its next fork; if that made its state
run-dependent it says ``{"retire": reason}`` and answers ``{"id", "retired"}`` from then on.
``--load-check``: ``probe_env.run_load_check`` runs after the imports; the ready line has it.
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
import sysconfig
import traceback
from typing import Any


class _Watch:
    """Names of modules whose top-level code read ``sys.argv`` (while installed)."""

    def __init__(self) -> None:
        self.readers: set = set()

    def touched(self) -> None:
        frame: Any = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_name == "<module>":
                name = frame.f_globals.get("__name__")
                if isinstance(name, str) and name != "__main__":
                    self.readers.add(name)
            frame = frame.f_back

    def install(self) -> None:
        watch = self

        class Argv(list):
            def __getitem__(self, index):
                watch.touched()
                return list.__getitem__(self, index)

            def __iter__(self):
                watch.touched()
                return list.__iter__(self)

            def __len__(self) -> int:
                watch.touched()
                return list.__len__(self)

        sys.argv = Argv(sys.argv)


class _Block:
    """A meta-path finder that refuses the given modules (and so what imports them)."""

    def __init__(self, names: set) -> None:
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name in self.names:
            raise ImportError(f"{name} reads sys.argv at import; each test imports it itself")
        return None


def _safe_roots() -> tuple:
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")
             if paths.get(key)}
    return tuple(root.rstrip(os.sep) + os.sep for root in roots)


def learnable(before: set, readers: set, roots: tuple, excluded: tuple) -> list:
    """Modules added since ``before`` that the worker may import itself, in import order."""
    names = []
    for name, module in list(sys.modules.items()):
        if name in before or name in readers or name == "__main__":
            continue
        spec = getattr(module, "__spec__", None)
        if spec is None or spec.name != name:
            continue  # an alias or a module built at run time: not importable by this name
        origin = spec.origin
        if origin in ("built-in", "frozen"):
            names.append(name)
            continue
        if not isinstance(origin, str) or not os.path.isabs(origin):
            continue  # namespace packages come with their submodules
        path = os.path.realpath(origin)
        if path.startswith(roots) and not path.startswith(excluded):
            names.append(name)
    return names


_confine: Any = None  # sandbox_init.confine, loaded by the worker before the first fork


def child(request: dict, private: list, watch: _Watch | None) -> int:
    """Run one test file as ``__main__`` in this forked process; return its exit code."""
    for fd in private:
        os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull)  # drop whatever the protocol reader had buffered
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
    if watch is not None:
        watch.install()
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
    """Forks children on request, reaps them, and learns what they imported."""

    def __init__(self, proto: int, learn: bool, reports: str) -> None:
        self.learn = learn
        self.roots = _safe_roots()
        self.reports = reports  # made by the client, which removes it even if the worker is killed
        self.children: dict = {}  # pid -> request id
        self.pending: dict = {}  # module names to import, in order
        self.failed: set = set()
        self.readers: set = set()
        self.retired = ""
        self.threads = _thread_count()
        self.proto = proto
        self.wake = (-1, -1)

    def send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode("utf-8")
        try:
            while data:
                data = data[os.write(self.proto, data):]
        except OSError:
            pass  # the client went away

    def fork(self, request: dict) -> int:
        if request.get("confine"):  # the child writes its report in the reports folder
            request = {**request, "confine": [*request["confine"], "--writable", self.reports]}
            global _confine
            if _confine is None:
                here = os.path.dirname(os.path.abspath(__file__))
                _confine = runpy.run_path(os.path.join(here, "sandbox_init.py"))["confine"]
        before = set(sys.modules)
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
                watch = _Watch()
                try:
                    code = child(request, private, watch if self.learn else None)
                finally:
                    if self.learn:
                        self._report(before, watch.readers, request)
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code & 0xFF)
        with contextlib.suppress(OSError):  # also here, so the group exists before we report it
            os.setpgid(pid, pid)
        return pid

    def _report(self, before: set, readers: set, request: dict) -> None:
        cwd = os.path.realpath(request["cwd"]).rstrip(os.sep) + os.sep
        test_dir = os.path.dirname(os.path.realpath(request["path"])).rstrip(os.sep) + os.sep
        names = learnable(before, readers, self.roots, (cwd, test_dir))
        target = os.path.join(self.reports, f"{os.getpid()}.json")
        with open(target + ".tmp", "w") as out:
            json.dump({"modules": names, "readers": sorted(readers)}, out)
        os.replace(target + ".tmp", target)

    def handle(self, request: dict) -> None:
        if "kill" in request:  # a test ran out of time: end its group
            if request["kill"] in self.children:
                with contextlib.suppress(OSError):
                    os.killpg(request["kill"], signal.SIGKILL)
            return
        rid = request.get("id")
        self.preload()  # what the tests so far taught, before this fork
        if self.retired:
            self.send({"id": rid, "retired": self.retired})
            return
        pid = self.fork(request)
        self.children[pid] = rid
        self.send({"id": rid, "pid": pid})

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
            self._collect(pid)

    def _collect(self, pid: int) -> None:
        path = os.path.join(self.reports, f"{pid}.json")
        try:
            with open(path) as handle:
                found = json.load(handle)
            os.unlink(path)
        except (OSError, ValueError):
            return
        self.readers.update(found.get("readers") or ())
        for name in found.get("modules") or ():
            if name not in sys.modules and name not in self.failed:
                self.pending[name] = None

    def preload(self) -> None:
        """Import the pending modules; retire if that made the state run-dependent."""
        if not self.pending or self.retired:
            return
        watch = _Watch()
        argv = sys.argv
        watch.install()
        block = _Block(self.readers)
        sys.meta_path.insert(0, block)
        try:
            while self.pending:
                name = next(iter(self.pending))
                del self.pending[name]
                if name in sys.modules or name in self.readers:
                    continue
                try:
                    importlib.import_module(name)
                except BaseException:  # noqa: B036 - the child imported it; we only may not
                    self.failed.add(name)
        finally:
            sys.argv = argv
            sys.meta_path.remove(block)
        if watch.readers:
            self.retire("an import read sys.argv: " + ", ".join(sorted(watch.readers)[:5]))
        elif _thread_count() > self.threads:
            self.retire("an import started a thread")
        gc.collect()
        gc.freeze()

    def retire(self, reason: str) -> None:
        self.retired = reason
        self.pending.clear()
        self.send({"retire": reason})

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
        for name in os.listdir(self.reports):
            os.unlink(os.path.join(self.reports, name))
        os.rmdir(self.reports)


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def _option(args: list, name: str) -> str:
    return args[args.index(name) + 1] if name in args[:-1] else ""


def main(args: list) -> int:
    learn = "--no-learn" not in args
    reports = _option(args, "--reports")
    check_timeout = _option(args, "--load-check")
    values = {_option(args, name) for name in ("--reports", "--load-check")}
    preload = [a for a in args if not a.startswith("--") and a not in values]
    # The protocol gets a private copy of stdout; stray prints (from imports) go to stderr.
    proto = os.dup(1)
    os.dup2(2, 1)
    loaded = {}
    try:
        for name in preload:
            module = importlib.import_module(name)
            loaded[name] = getattr(module, "__version__", "?")
    except BaseException as exc:  # noqa: B036 - report why, then stop
        cause = exc.__cause__ or exc
        message = f"{type(cause).__name__}: {cause}"
        os.write(proto, (json.dumps({"ready": False, "error": message}) + "\n").encode())
        return 1
    gc.collect()
    gc.freeze()  # keep the collector off the imported objects: fewer copy-on-write faults
    hello = {"ready": True, "loaded": loaded, "learn": learn, "pid": os.getpid()}
    if check_timeout:
        here = os.path.dirname(os.path.abspath(__file__))
        check = runpy.run_path(os.path.join(here, "probe_env.py"))["run_load_check"]
        hello["load_check"] = check(float(check_timeout), preloaded=True)
    worker = Worker(proto, learn, reports)
    worker.send(hello)
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
