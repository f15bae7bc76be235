"""Time the test suite: wall seconds and the CPU seconds of every process it started.

Runs pytest the way ``scripts/test.sh`` does (after its set-up, lint and types) as a child
subreaper, so processes that outlive their parent (kept warm workers) are still reaped and
counted. Prints one line per run and the median; timing lives here, never in a test.

Usage: .venv/bin/python bench/suite_time.py [--repeat N] [--workers N|auto] [PYTEST ARGS...]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process (Linux), so their CPU counts."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def one_run(argv: list[str], linger: float = 30.0) -> tuple[float, float, int]:
    """Run ``argv``; reap every child as it ends (orphans included, so none stays a zombie
    that a test waiting for a process group to vanish would still see); then wait up to
    ``linger`` seconds for the last orphans (kept workers stopped at the suite's end)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT)
    code: int | None = None
    while code is None:
        pid, status = os.waitpid(-1, 0)
        if pid == proc.pid:
            code = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    deadline = time.monotonic() + linger
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.1)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workers", default="auto", help="pytest-xdist -n (default: auto)")
    args, pytest_args = parser.parse_known_args()
    become_subreaper()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as scripts/test.sh runs the suite
    os.environ.setdefault("BACKPORT_TEST_PYTHON",
                          str(ROOT / ".ci" / "venvs" / "torch-2.13.0" / "bin" / "python"))
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", args.workers,
            *pytest_args]
    load = os.getloadavg()[0]
    walls = []
    # pytest keeps the last three temp roots of a user: another checkout's run, as the same
    # user, would remove this run's folders under it. Its own root keeps them.
    root = tempfile.mkdtemp(prefix="suite-time-")
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", root)
    for n in range(args.repeat):
        wall, cpu, code = one_run(argv)
        walls.append(wall)
        print(f"run {n + 1}: wall {wall:.1f} s, CPU {cpu:.1f} s, exit {code}", flush=True)
    print(f"median wall {statistics.median(walls):.1f} s over {args.repeat} run(s); "
          f"{os.cpu_count()} CPUs; load {load:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
