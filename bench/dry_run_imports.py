"""Which `backport` modules one `apply --api put_metric --dry-run` imports.

Usage: .venv/bin/python bench/dry_run_imports.py [--json]

Builds the demo sandbox in a temporary folder with its environments on ``--python`` (an
interpreter with torch: default `.ci/venvs/torch-2.13.0/bin/python`, as `scripts/setup.sh`
makes it), runs the dry run there in a fresh interpreter and prints its exit code, how many
modules of the package it imported, and which. Without such an interpreter the dry run stops
at its prerequisites, and the count says less.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backport.bundled import DEMO_PATCH_SET  # noqa: E402
from backport.demo.sandbox import build_sandbox  # noqa: E402

# Run in the sandbox's project: the dry run, then the package's modules, as one JSON line.
SCRIPT = """
import json, sys
from backport.cli import main
try:
    main(["apply", "--api", "put_metric", "--dry-run"])
except SystemExit as exc:
    code = exc.code
print("MODULES " + json.dumps({"code": code, "modules": sorted(
    m for m in sys.modules if m == "backport" or m.startswith("backport."))}))
"""


def dry_run_modules(torch_python: str | None,
                    python: str = sys.executable) -> tuple[int, list[str]]:
    """The exit code of the dry run in a fresh demo sandbox, and the package modules imported."""
    with tempfile.TemporaryDirectory(prefix="dry-run-imports-") as tmp:
        sandbox = build_sandbox(Path(tmp) / "sandbox", DEMO_PATCH_SET, torch_python)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BACKPORT_")}
        env |= {"BACKPORT_CACHE": str(Path(tmp) / "cache"), "PYTHONPATH": str(ROOT)}
        done = subprocess.run([python, "-c", SCRIPT], cwd=sandbox.project, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("MODULES ")]
    if not lines:
        raise SystemExit(f"the dry run printed no module list:\n{done.stdout}\n{done.stderr}")
    result = json.loads(lines[-1].removeprefix("MODULES "))
    return result["code"], result["modules"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="Print the result as JSON.")
    parser.add_argument("--python", default=str(ROOT / ".ci/venvs/torch-2.13.0/bin/python"),
                        help="The environments' interpreter (one with torch).")
    args = parser.parse_args()
    code, modules = dry_run_modules(args.python if Path(args.python).exists() else None)
    if args.json:
        print(json.dumps({"exit": code, "count": len(modules), "modules": modules}, indent=2))
    else:
        print(f"apply --api put_metric --dry-run (exit {code}): {len(modules)} backport modules")
        for name in modules:
            print(f"  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
