"""Time the test suite: wall seconds and the CPU seconds of every process it started.

Runs pytest the way ``scripts/test.sh`` does (after its set-up, lint and types) as a child
subreaper, so processes that outlive their parent (daemons) are still reaped and
counted, and says how much of the CPU they took, by the script they ran. Prints one line per
run and the median; timing lives here, never in a test.

CPU seconds depend on the machine (the same tree cost 366 CPU s on one 2-core machine and 585 on
another), so each invocation first times two fixed workloads, a pure-Python loop and ``import
torch``, and prints them with the runs: compare suite figures only beside them.

Usage: .venv/bin/python bench/suite_time.py [--repeat N] [--workers N|auto] [PYTEST ARGS...]
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from child_cpu import median_child_cpu

ROOT = Path(__file__).resolve().parent.parent
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process (Linux), so their CPU counts."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def one_run(argv: list[str], linger: float = 30.0) -> tuple[float, float, float, int]:
    """Run ``argv``; reap every child as it ends (orphans included, so none stays a zombie
    that a test waiting for a process group to vanish would still see); then wait up to
    ``linger`` seconds for the last orphans.
    Returns wall seconds, CPU seconds of all, CPU seconds of the orphans (processes that
    outlived the test that started them: daemons), and pytest's exit code."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT)
    code: int | None = None
    cpu = orphans = 0.0
    deadline = None
    names: dict[int, str] = {}  # orphan pid -> its command line, seen while it ran
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if deadline is not None and time.monotonic() > deadline:
                break
            _note_orphans(names, proc.pid)
            time.sleep(0.2)
            continue
        spent = usage.ru_utime + usage.ru_stime
        cpu += spent
        if pid == proc.pid:
            code = os.waitstatus_to_exitcode(status)
            wall = time.monotonic() - start
            deadline = time.monotonic() + linger
        else:
            orphans += spent
            ORPHANS[_kind(names.get(pid, "?"))] += spent
    assert code is not None
    return wall, cpu, orphans, code


ORPHANS: collections.Counter[str] = collections.Counter()
LOOP = "n = 0\nfor i in range(10_000_000):\n    n += i\n"  # the pure-Python yardstick


def machine_speed(torch_python: str, repeat: int = 3) -> str:
    """One line saying how fast this machine is: the median CPU seconds of a 10**7-step Python
    loop and of ``import torch`` (torch_npu's autoload off, as the suite's tests run it)."""
    loop = median_child_cpu(lambda: subprocess.run([sys.executable, "-c", LOOP], check=True),
                            repeat)
    said = f"machine: a 10**7-step Python loop {loop:.2f} CPU s"
    if Path(torch_python).exists():
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        torch = median_child_cpu(lambda: subprocess.run(
            [torch_python, "-c", "import torch"], check=True, env=env), repeat)
        said += f", `import torch` {torch:.2f} CPU s"
    return said + f" (medians of {repeat})"


def _note_orphans(names: dict[int, str], own: int) -> None:
    """Remember the command line of each process re-parented to this one (not pytest)."""
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in names or int(entry.name) == own:
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            if int(stat.rpartition(")")[2].split()[1]) == me:
                names[int(entry.name)] = Path(entry.path, "cmdline").read_bytes().replace(
                    b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue


def _kind(cmdline: str) -> str:
    """A short name for an orphan's command line: the last script it names (a sandbox's
    command comes after the launcher's own)."""
    words = [w for w in cmdline.split() if not w.startswith("-")]
    scripts = [w for w in words if w.endswith(".py")]
    return Path(scripts[-1]).name if scripts else " ".join(words[:2])[:60]


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
    speed = machine_speed(os.environ["BACKPORT_TEST_PYTHON"])
    print(speed, flush=True)
    load = os.getloadavg()[0]
    walls = []
    # pytest keeps the last three temp roots of a user: another checkout's run, as the same
    # user, would remove this run's folders under it. Its own root keeps them.
    root = tempfile.mkdtemp(prefix="suite-time-")
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", root)
    for n in range(args.repeat):
        wall, cpu, orphans, code = one_run(argv)
        walls.append(wall)
        print(f"run {n + 1}: wall {wall:.1f} s, CPU {cpu:.1f} s (of which {orphans:.1f} s in "
              f"processes that outlived their test), exit {code}", flush=True)
        for kind, spent in ORPHANS.most_common(8):
            print(f"  outlived their test: {spent:7.1f} s  {kind}")
        ORPHANS.clear()
    print(f"median wall {statistics.median(walls):.1f} s over {args.repeat} run(s); "
          f"{os.cpu_count()} CPUs; load {load:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    print(speed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
