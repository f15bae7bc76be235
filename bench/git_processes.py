"""How many git processes `backport check` and `apply --skip-tests` start on the demo sandbox.

Usage: .venv/bin/python bench/git_processes.py [--tree DIR] [--all] [--show]

Each command runs as a user runs it (``python -m backport``) on a fresh demo sandbox (four
branches, its own cache). A ``git`` first on PATH logs every git process the tool starts;
``--all`` also counts, in a second run without that wrapper, every process the run starts,
git's own children included (``strace -f``).
``--tree DIR`` runs the code of another checkout (e.g. an older commit exported with
``git archive``), for a before/after figure; ``--show`` lists the git subcommands by count.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backport.demo.sandbox import build_sandbox  # noqa: E402
from backport.git.run import subcommand  # noqa: E402

COMMANDS = (("check",), ("apply", "--all", "--skip-tests"))
WRAPPER = """#!/bin/sh
printf '%s\\n' "$*" >> "$BENCH_GIT_LOG"
exec {git} "$@"
"""


def run(tree: Path, command: tuple[str, ...], strace: bool) -> tuple[list[str], int | None]:
    """The git command lines ``command`` started (logged by the wrapper); with ``strace`` the
    number of processes it started (no wrapper: the run alone)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-git-"))
    try:
        sandbox = build_sandbox(tmp / "sb", ROOT / "patches" / "put_metric", sys.executable)
        real_git = shutil.which("git")
        assert real_git, "git is not on PATH"
        (tmp / "bin").mkdir()
        (tmp / "bin" / "git").write_text(WRAPPER.format(git=real_git), encoding="utf-8")
        (tmp / "bin" / "git").chmod(0o755)
        log = tmp / "git.log"
        env = {**os.environ, "BACKPORT_CACHE": str(tmp / "cache"), "BENCH_GIT_LOG": str(log),
               "PATH": f"{tmp / 'bin'}{os.pathsep}{os.environ['PATH']}",
               "PYTHONPATH": str(tree)}
        if strace:
            env["PATH"] = os.environ["PATH"]
        argv = [sys.executable, "-m", "backport", *command]
        trace = tmp / "strace.log"
        if strace:
            argv = ["strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o",
                    str(trace), *argv]
        done = subprocess.run(argv, cwd=sandbox.project, env=env, capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-500:]}")
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        everything = None
        if strace:
            everything = sum(1 for line in trace.read_text().splitlines()
                             if "execve(" in line and line.rstrip().endswith("= 0")) - 1
        return lines, everything
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code runs")
    parser.add_argument("--all", action="store_true", help="also count every process (strace)")
    parser.add_argument("--show", action="store_true", help="list the git commands by count")
    args = parser.parse_args()
    if args.all and not shutil.which("strace"):
        parser.error("--all needs strace")
    for command in COMMANDS:
        lines, _ = run(args.tree.resolve(), command, False)
        extra = ""
        if args.all:
            _, everything = run(args.tree.resolve(), command, True)
            extra = f", {everything} processes in all (git's children included)"
        print(f"backport {' '.join(command)}: {len(lines)} git processes{extra}")
        if args.show:
            counts = collections.Counter(subcommand(line.split()) for line in lines)
            for text, count in counts.most_common():
                print(f"  {count:4d}  git {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
