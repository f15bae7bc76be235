"""What a run with no stored probe spends probing an environment whose kept worker already runs.

Usage: .venv/bin/python bench/kept_load_check.py [--python PATH] [--repeat N]

A first run (empty cache) starts the kept worker of the torch environment at ``--python``
(default ``$BACKPORT_TEST_PYTHON``), which runs the probe's torch_npu load check in a fork.
Each later run gets an empty cache of its own (another project, a cleared cache) and attaches
to that worker: its probe reads the worker's check. For comparison, the probe those runs made
before the kept worker sent its check to every client: one with a load check of its own (a
process that imports torch and torch_npu). Prints the CPU seconds (user + system of the child
processes this process waited for), the median of N runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from child_cpu import median_child_cpu, torch_bench_args  # noqa: E402  (bench/, the script's own folder)

from backport.config.model import Environment  # noqa: E402
from backport.envs.kept import KeepPolicy, stop_kept_workers  # noqa: E402
from backport.envs.pool import Environments  # noqa: E402
from backport.envs.probe import probe  # noqa: E402


def _run(env: Environment, keep: KeepPolicy, root: Path) -> None:
    """One run's prewarm and probe with an empty cache of its own."""
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=root))
    envs = Environments({"BACKPORT_CACHE": str(cache)}, cache, keep=keep)
    try:
        envs.prewarm(env, "none")
        envs.probe(env)
    finally:
        envs.close()


def main() -> int:
    args = torch_bench_args(__doc__.splitlines()[0])
    env = Environment(name="torch", python=Path(args.python))
    with tempfile.TemporaryDirectory(prefix="bpk-") as folder:
        os.chmod(folder, 0o700)
        keep = KeepPolicy(Path(folder), idle=600.0)
        root = Path(folder)
        try:
            _run(env, keep, root)  # starts the kept worker, with its load check
            attached = median_child_cpu(lambda: _run(env, keep, root), args.repeat)
        finally:
            stop_kept_workers(Path(folder))
    separate = median_child_cpu(lambda: probe(env), args.repeat)
    print(f"a run with no stored probe, kept worker running: {attached:.2f} CPU s")
    print(f"the probe such a run made before (own load check): {separate:.2f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
