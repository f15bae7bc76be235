"""What starting a `backport` process costs: CPU seconds of a few short commands.

Usage: .venv/bin/python bench/cli_startup.py [--backport PATH] [--repeat N]

Runs each command N times and prints the median CPU seconds (user + system of the child and
the processes it waited for): `--version`, `--help`, `check --help`, and `check --offline` in a
demo sandbox project built once in a temporary folder (its environment is this interpreter).
Then the cumulative ``-X importtime`` of ``backport.cli`` (median of N). Bytecode is written, as
an installed tool's is.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backport.bundled import DEMO_PATCH_SET  # noqa: E402
from backport.demo.sandbox import build_sandbox  # noqa: E402

COMMANDS = (["--version"], ["--help"], ["check", "--help"])


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cpu(argv: list[str], repeat: int, cwd: Path | None, env: dict[str, str]) -> float:
    """Median CPU seconds of ``argv`` over ``repeat`` runs (the first run's bytecode kept)."""
    subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)  # warm the caches
    spent = []
    for _ in range(repeat):
        before = _children_cpu()
        subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
        spent.append(_children_cpu() - before)
    return statistics.median(spent)


def import_time(python: str, repeat: int, env: dict[str, str]) -> float:
    """Median cumulative ``-X importtime`` of ``backport.cli``, in seconds."""
    spent = []
    for _ in range(repeat):
        done = subprocess.run([python, "-X", "importtime", "-c", "import backport.cli"],
                              env=env, capture_output=True, text=True, check=True)
        line = [ln for ln in done.stderr.splitlines() if re.search(r"\|\s*backport\.cli$", ln)]
        spent.append(int(line[-1].split("|")[1]) / 1e6)
    return statistics.median(spent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backport", default=str(ROOT / ".venv" / "bin" / "backport"))
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    python = str(Path(args.backport).with_name("python"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BACKPORT_") and k != "PYTHONDONTWRITEBYTECODE"}
    rows = [(f"backport {' '.join(argv)}", cpu([args.backport, *argv], args.repeat, None, env))
            for argv in COMMANDS]
    with tempfile.TemporaryDirectory(prefix="cli-startup-") as tmp:
        sandbox = build_sandbox(Path(tmp) / "sandbox", DEMO_PATCH_SET, sys.executable)
        env_check = dict(env, XDG_CACHE_HOME=str(Path(tmp) / "cache"))  # its probe cache
        rows.append(("backport check --offline (demo sandbox)",
                     cpu([args.backport, "check", "--offline"], args.repeat, sandbox.project,
                         env_check)))
    rows.append(("-X importtime backport.cli (cumulative)", import_time(python, args.repeat, env)))
    print(f"median of {args.repeat} runs, CPU s (user + system)\n")
    print("| command | CPU s |\n| --- | ---: |")
    for name, seconds in rows:
        print(f"| `{name}` | {seconds:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
