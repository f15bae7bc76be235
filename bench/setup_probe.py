"""What `env setup` spends on an environment that is already up to date: one probe for its pins.

Usage: .venv/bin/python bench/setup_probe.py [--python PATH] [--repeat N]

Runs ``setup_env`` (its probe reads versions only since this change) and, for comparison, the
full probe it used to run (with the torch_npu load check, a process that imports torch and
torch_npu), on the torch environment at ``--python`` (default ``$BACKPORT_TEST_PYTHON``).
Prints the CPU seconds (user + system of the child processes) of each, the median of N runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from child_cpu import median_child_cpu, torch_bench_args  # noqa: E402  (bench/, the script's own folder)

from backport.config.model import Environment  # noqa: E402
from backport.envs.probe import probe  # noqa: E402
from backport.envs.setup import setup_env  # noqa: E402


def main() -> int:
    args = torch_bench_args(__doc__.splitlines()[0])
    first = probe(Environment(name="torch", python=Path(args.python)), versions_only=True)
    pins = {"torch": str(first.torch), "torch_npu": str(first.torch_npu)}
    env = Environment(name="torch", python=Path(args.python), expect=pins)
    setup = median_child_cpu(lambda: setup_env(env, log=lambda _line: None, use_uv=False),
                             args.repeat)
    full = median_child_cpu(lambda: probe(env), args.repeat)
    print(f"env setup, environment up to date (pins {pins}): {setup:.2f} CPU s")
    print(f"the full probe it ran before (torch_npu load check):  {full:.2f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
