"""What a run spends preparing an environment that has a ``wrapper:``.

Usage: .venv/bin/python bench/wrapper_prewarm.py [--python PATH] [--repeat N]

The environment is the interpreter at ``--python`` (default ``$BACKPORT_TEST_PYTHON``) started
through a wrapper script, as the seed's ``run_api_python_version.sh`` starts it. Each run
prewarms and probes as `apply` does. The wrapper starts each
test, so no test forks from a warm worker: a run that starts one anyway pays an import of torch
for nothing. Prints the CPU seconds of the child processes (user + system), the median of N.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from child_cpu import median_child_cpu, torch_bench_args  # noqa: E402  (bench/, the script's own folder)

from backport.config.model import Environment  # noqa: E402
from backport.envs.environments import Environments  # noqa: E402


def _run(env: Environment) -> None:
    """One run's prewarm, probe and runner, then every worker it stopped."""
    envs = Environments()
    try:
        envs.prewarm(env, "none")
        envs.runner(env, "none")
    finally:
        envs.close()
    for thread in threading.enumerate():  # a worker stopped in the background, reaped
        if thread is not threading.current_thread() and thread.name != "MainThread":
            thread.join(120)


def main() -> int:
    args = torch_bench_args(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory(prefix="bp-wrapper-") as folder:
        wrapper = Path(folder) / "run_python.sh"
        wrapper.write_text(f'#!/bin/sh\nexec "{args.python}" "$@"\n', encoding="utf-8")
        wrapper.chmod(0o755)
        env = Environment(name="wrapped", python=Path(args.python), wrapper=(str(wrapper),),
                          wrapper_shown=("run_python.sh",))
        _run(env)  # bytecode written once
        spent = median_child_cpu(lambda: _run(env), args.repeat)
    print(f"a run, environment with a wrapper: {spent:.2f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
