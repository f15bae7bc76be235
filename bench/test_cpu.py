"""Where the suite's CPU goes: run pytest with a per-test CPU recorder, then sum by folder and file.

Usage: .venv/bin/python bench/test_cpu.py [--top N] [PYTEST ARGS...]   (default: the whole suite)

Counts each test's own process and the children it waited for; processes that outlive a
test are missed here (``bench/suite_time.py`` counts them), so the total is a lower bound.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--workers", default="auto")
    args, pytest_args = parser.parse_known_args()
    out = Path(tempfile.mkdtemp(prefix="test-cpu-"))
    env = dict(os.environ, BACKPORT_TEST_CPU_OUT=str(out), PYTHONPATH=str(ROOT / "bench"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as scripts/test.sh runs the suite
    env.setdefault("BACKPORT_TEST_PYTHON",
                   str(ROOT / ".ci" / "venvs" / "torch-2.13.0" / "bin" / "python"))
    env.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.mkdtemp(prefix="test-cpu-tmp-"))
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "test_cpu_plugin", "-n", args.workers, *pytest_args],
                           cwd=ROOT, env=env)
    rows = [json.loads(line) for f in out.glob("*.jsonl") for line in f.read_text().splitlines()]
    by_file: collections.Counter[str] = collections.Counter()
    by_dir: collections.Counter[str] = collections.Counter()
    for row in rows:
        path = row["test"].split("::")[0]
        by_file[path] += row["cpu"]
        by_dir[str(Path(path).parent)] += row["cpu"]
    total = sum(r["cpu"] for r in rows)
    print(f"\n{len(rows)} tests, {total:.1f} CPU s in the tests (setup and teardown included)")
    for title, counter in (("folder", by_dir), ("file", by_file)):
        print(f"\nby {title}:")
        for name, cpu in counter.most_common(args.top):
            print(f"  {cpu:7.1f}  {name}")
    print("\nslowest tests:")
    for row in sorted(rows, key=lambda r: -r["cpu"])[: args.top]:
        print(f"  {row['cpu']:7.1f}  {row['test']}")
    (out / "summary.json").write_text(json.dumps(rows))
    print(f"\nrows: {out / 'summary.json'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
