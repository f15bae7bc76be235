"""Start a command in a PID namespace of its own: it sees only its own processes, and they all
end together.

Run by ``backport`` with its own interpreter (``python -I -S``); standard library only.

    sandbox_init.py [--lifeline FD] -- COMMAND...
    sandbox_init.py --check

The process unshares a user, PID and mount namespace (the user namespace maps the caller's
uid and gid to themselves, so the command runs as the same user, and it is what lets an
unprivileged user create the other two), then forks the namespace's init. The init mounts a
fresh ``/proc`` (so ``/proc`` lists only the namespace's processes: no other process's
``environ`` can be read), starts COMMAND as its child, reaps whatever is orphaned inside, and
exits when COMMAND ends; the kernel then kills every other process of the namespace. The init
also dies with this outer process (``PR_SET_PDEATHSIG``), and with the ``--lifeline`` pipe:
its write end is held only by ``backport``, so when ``backport`` ends in any way, even by
SIGKILL, the init reads EOF and ends the namespace. The outer process exits as COMMAND did
(killed by the same signal, when it was killed).

The mount namespace is a copy of the caller's: every file and device is where it was.

``--check`` makes the namespace, checks that its init is pid 1 and sees its own ``/proc``, and
exits 0; otherwise it prints why on stderr and exits 1. ``BACKPORT_SANDBOX_REFUSE=1`` in the
environment makes ``--check`` report a refusal, as a host without namespaces does (for
tests; a run then takes the host's "no isolation" path).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_SET_PDEATHSIG = 1
START_FAILED = 125  # the sandbox could not be made (the reason is on stderr)
CANNOT_RUN = 127  # COMMAND could not be started
REFUSE_VAR = "BACKPORT_SANDBOX_REFUSE"

_libc = ctypes.CDLL(None, use_errno=True)


def _fail(message: str, code: int = START_FAILED) -> None:
    os.write(2, f"backport sandbox: {message}\n".encode("utf-8", "replace"))
    os._exit(code)


def _call(what: str, result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        _fail(f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter() -> None:
    """Unshare the user, PID and mount namespaces; the caller keeps its uid and gid."""
    uid, gid = os.getuid(), os.getgid()
    _call("unshare", _libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS))
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError as exc:
        _fail(f"cannot map the user into the namespace: {exc.strerror}")


def mount_proc() -> None:
    """In the init: mounts stay in this namespace; ``/proc`` becomes the namespace's."""
    _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)  # best effort: already private
    _call("mount /proc", _libc.mount(b"proc", b"/proc", b"proc",
                                     MS_NOSUID | MS_NODEV | MS_NOEXEC, None))


def _watch_lifeline(fd: int) -> None:
    """End the namespace (this init) when the lifeline's writer, backport, is gone."""
    def watch() -> None:
        while True:
            try:
                if not os.read(fd, 512):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        os._exit(137)
    threading.Thread(target=watch, daemon=True).start()


def _devnull_stdio() -> None:
    """Let go of the command's stdin and stdout, so its reader sees EOF when it ends."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def init(command: list[str], lifeline: int, report: int) -> None:
    """The namespace's pid 1: start ``command``, reap, exit with its status (never returns)."""
    mount_proc()
    child = os.fork()
    if child == 0:
        if lifeline >= 0:
            os.close(lifeline)
        os.close(report)
        for name in ("SIGPIPE", "SIGXFSZ"):  # Python ignores them; a started program must not
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            _fail(f"cannot run {command[0]}: {exc.strerror}", CANNOT_RUN)
    _devnull_stdio()
    if lifeline >= 0:
        _watch_lifeline(lifeline)
    while True:
        try:
            pid, status = os.wait()
        except InterruptedError:
            continue
        except ChildProcessError:
            status = CANNOT_RUN << 8
            break
        if pid == child:
            break
    os.write(report, f"{status}\n".encode())
    os._exit(0)


def check() -> None:
    """In the init: it is pid 1 and its /proc is the namespace's."""
    mount_proc()
    if os.getpid() != 1 or os.readlink("/proc/self") != "1":
        _fail("the namespace's /proc is not its own")
    os._exit(0)


def main(args: list[str]) -> None:
    checking = args[:1] == ["--check"]
    lifeline = -1
    if args[:1] == ["--lifeline"]:
        lifeline, args = int(args[1]), args[2:]
    command = args[1:] if args[:1] == ["--"] else []
    if not checking and not command:
        _fail("usage: sandbox_init.py [--lifeline FD] -- COMMAND... | --check", 2)
    if checking and os.environ.get(REFUSE_VAR) == "1":
        _fail(f"{REFUSE_VAR}=1")
    enter()
    read_end, report = os.pipe()
    init_pid = os.fork()
    if init_pid == 0:
        os.close(read_end)
        _call("prctl", _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))
        if checking:
            check()
        init(command, lifeline, report)
    os.close(report)
    if lifeline >= 0:
        os.close(lifeline)
    if not checking:
        _devnull_stdio()
    _, status = os.waitpid(init_pid, 0)
    reported = b""
    while True:
        chunk = os.read(read_end, 64)
        if not chunk:
            break
        reported += chunk
    if checking:
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
    if not reported:  # the init was killed: the lifeline ended, or someone killed it
        os._exit(128 + (os.WTERMSIG(status) if os.WIFSIGNALED(status) else 1))
    code = int(reported)
    if os.WIFSIGNALED(code):
        signal.signal(os.WTERMSIG(code), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(code))
    os._exit(os.WEXITSTATUS(code))


if __name__ == "__main__":
    main(sys.argv[1:])
