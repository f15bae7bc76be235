"""A warm test worker: import torch once, then fork one child per test file.

Run by ``backport`` with an environment's interpreter; standard library only, Python 3.8+.
Protocol (JSON lines): after start-up the worker writes ``{"ready": true, ...}`` or
``{"ready": false, "error": ...}``. Each request on stdin is
``{"cwd", "path", "argv", "log", "env"}``; the worker answers ``{"pid": N}`` as soon as the
child (leader of its own process group) exists, then ``{"exit_code": N}`` when it ends
(``-signal`` when killed). EOF on stdin stops the worker.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import sys
import traceback

DEFAULT_PRELOAD = ("torch",)


def child(request: dict, proto: int) -> int:
    """Run one test file as ``__main__`` in this forked process; return its exit code."""
    import runpy

    os.close(proto)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull)  # drop whatever the protocol reader had buffered
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(request["cwd"])
    os.environ.update(request.get("env") or {})
    path = request["path"]
    if not os.path.isfile(path):  # what `python missing.py` says and does
        sys.stderr.write(
            f"{sys.executable}: can't open file {path!r}: [Errno 2] No such file or directory\n"
        )
        return 2
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    code = 0
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    except BaseException:  # noqa: B036 - the test's own crash is its result
        traceback.print_exc()
        code = 1
    return code


def serve(proto: int) -> None:
    """Answer requests from stdin until EOF."""

    def send(message: dict) -> None:
        os.write(proto, (json.dumps(message) + "\n").encode("utf-8"))

    while True:
        line = sys.stdin.readline()
        if not line:
            break
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setpgid(0, 0)
                code = child(request, proto)
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code & 0xFF)
        try:
            os.setpgid(pid, pid)  # also here, so the group exists before we report it
        except OSError:
            pass  # the child already did it, or already exited
        send({"pid": pid})
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            send({"exit_code": -os.WTERMSIG(status)})
        else:
            send({"exit_code": os.WEXITSTATUS(status)})


def main(preload: list) -> int:
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
    os.write(proto, (json.dumps({"ready": True, "loaded": loaded}) + "\n").encode())
    serve(proto)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(DEFAULT_PRELOAD)))
