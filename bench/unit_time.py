"""Time the unit layer (``tests/unit``) as ``scripts/test.sh unit`` runs it: its wall and CPU
seconds and how many tests passed, with git kept off PATH (the layer needs none).

The goal (issue 36): at least 500 tests in at most 30 s on 2 cores, passing with no git on
PATH. Prints one line per run, the median and whether the goal is met; timing lives here,
never in a test.

Usage: .venv/bin/python bench/unit_time.py [--repeat N] [--workers N|auto] [--with-git]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_TESTS, GOAL_SECONDS = 500, 30.0
# What pytest and the tests under it run: an interpreter, a shell. Never git.
KEPT = ("python3", "bash", "sh", "env")


def path_without_git(folder: Path) -> str:
    """A PATH of one folder linking the few programs the layer may name, git not among them."""
    folder.mkdir()
    for name in KEPT:
        found = shutil.which(name)
        if found:
            (folder / name).symlink_to(found)
    assert shutil.which("git", path=str(folder)) is None
    return str(folder)


def one_run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, int]:
    """Wall s, CPU s (user + system of the child and what it reaped), passed, exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = done.stdout.strip().splitlines()[-1:] or [""]
    found = re.search(r"(\d+) passed", tail[0])
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-4000:] + done.stderr[-2000:])
    return wall, cpu, int(found.group(1)) if found else 0, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", default="0", help="pytest-xdist -n (default 0, as "
                        "scripts/test.sh unit runs it)")
    parser.add_argument("--with-git", action="store_true", help="leave PATH as it is")
    args = parser.parse_args()
    argv = [str(ROOT / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-p",
            "no:cacheprovider", "-n", args.workers, "tests/unit"]
    load = os.getloadavg()[0]
    walls, cpus, counts, codes = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="nogit-") as folder:
        env = {"PYTEST_DEBUG_TEMPROOT": folder, **os.environ}  # its own pytest temp root
        if not args.with_git:
            env["PATH"] = path_without_git(Path(folder) / "bin")
        for n in range(args.repeat):
            wall, cpu, passed, code = one_run(argv, env)
            walls.append(wall)
            cpus.append(cpu)
            counts.append(passed)
            codes.append(code)
            print(f"run {n + 1}: {passed} passed, wall {wall:.1f} s, CPU {cpu:.1f} s, "
                  f"exit {code}", flush=True)
    wall, tests = statistics.median(walls), min(counts)
    met = tests >= GOAL_TESTS and wall <= GOAL_SECONDS and not any(codes)
    print(f"median wall {wall:.1f} s, median CPU {statistics.median(cpus):.1f} s, {tests} tests, "
          f"{'no git on PATH' if not args.with_git else 'git on PATH'}; {os.cpu_count()} CPUs; "
          f"load {load:.2f} at start, {os.getloadavg()[0]:.2f} at end; goal (>= {GOAL_TESTS} "
          f"tests, <= {GOAL_SECONDS:.0f} s): {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
