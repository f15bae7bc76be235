"""The CPU of a command and of every process it started, orphans included.

Usage: .venv/bin/python bench/tree_cpu.py [--linger S] -- COMMAND...

``bench/test_cpu.py`` counts what each test waited for, so a kept warm worker, which outlives
the run that started it, is not counted. Here this process becomes the child subreaper of
everything COMMAND starts (Linux ``PR_SET_CHILD_SUBREAPER``): an orphan (a kept worker whose
starter ended) is re-parented to it and reaped here when it ends, so its CPU, and that of
whatever it waited for, is counted too. After COMMAND ends it waits up to ``--linger`` seconds
(default 60) for the orphans still running, then prints the user + system CPU seconds of all
that ended and how many did not.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _reap(deadline: float) -> int:
    """Reap children until none is left or ``deadline``; returns how many are left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid == 0:
            if time.monotonic() >= deadline:
                return len([p for p in os.listdir("/proc") if p.isdigit()
                            and _parent(int(p)) == os.getpid()])
            time.sleep(0.2)


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return int(handle.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--linger", type=float, default=60.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a command is required")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("cannot become a child subreaper here", file=sys.stderr)
        return 1
    started = time.monotonic()
    code = subprocess.call(command)
    left = _reap(time.monotonic() + args.linger)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{used.ru_utime + used.ru_stime:.1f} CPU s in all ({used.ru_utime:.1f} user, "
          f"{used.ru_stime:.1f} system), {time.monotonic() - started:.0f} s wall; "
          f"{left} process(es) still running after --linger", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
