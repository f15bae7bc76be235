#!/usr/bin/env python3
"""Acceptance run of the shipped map: put_metric on the real Ascend/pytorch branch states.

Not part of CI (it builds three ~5 GB environments and runs torch). Needs a local copy of
Ascend/pytorch, a git directory named by ``BACKPORT_REAL_REPO`` (e.g. a ``git clone --mirror``
of https://gitcode.com/Ascend/pytorch.git); it is only read.

1. ``backport env setup`` builds the shipped branches.yaml's three environments from the
   package index (or only checks them when they are already there).
2. A local upstream holds the four target branches at their pre-states, the parents of the real
   put_metric commits; the fork is a bare repository without branches. Both borrow the
   copy's objects, as a fork on the forge shares its upstream's object pool.
3. ``backport apply --api put_metric`` runs on them with the embedded local forge (the shipped
   map with ``forge: local`` and the URL variables; environments exactly as shipped).
4. Per branch it prints torch, torch_npu, result and time, and checks that every PR body's
   evidence names that branch's own torch and torch_npu. Exit 0 when all of that holds.

Usage: ``BACKPORT_REAL_REPO=/srv/pytorch.git .venv/bin/python scripts/acceptance_real_map.py``
(``--keep`` keeps the work folder; ``--skip-setup`` when the environments are known good).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The real put_metric commits' parents: each branch as it was before the backport landed.
PRE_STATES = {"v2.7.1": "82ea54ed3", "v2.11.0": "d5bd55141", "v2.12.0": "8c57daccf",
              "master": "c6b207c55"}  # fmt: skip
EXPECTED = {"v2.7.1": ("2.7.1", "2.7.1.post4"), "v2.11.0": ("2.11.0", "2.11.0"),
            "v2.12.0": ("2.12.0", "2.12.0"), "master": ("2.12.0", "2.12.0")}  # fmt: skip


def backport(*args: str, cwd: Path, env: dict[str, str] | None = None,
             capture: bool = True) -> subprocess.CompletedProcess:  # fmt: skip
    return subprocess.run([sys.executable, "-m", "backport", *args], cwd=cwd,
                          env={**os.environ, **(env or {})}, text=True, check=False,
                          capture_output=capture)  # fmt: skip


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def share_objects(real: Path, path: Path) -> None:
    """An empty bare repository at ``path`` that borrows ``real``'s objects (like a fork on the
    forge, whose objects live in the upstream's pool): a push then sends only new objects."""
    git("init", "-q", "--bare", str(path))
    (path / "objects" / "info" / "alternates").write_text(
        str((real / "objects").resolve()) + "\n", encoding="utf-8")


def make_upstream(real: Path, path: Path) -> None:
    """A bare repository sharing ``real``'s objects, with only the four pre-state branches."""
    share_objects(real, path)
    for branch, short in PRE_STATES.items():
        sha = git("--git-dir", str(real), "rev-parse", "--verify", short + "^{commit}")
        git("--git-dir", str(path), "update-ref", f"refs/heads/{branch}", sha)
    git("--git-dir", str(path), "config", "uploadpack.allowFilter", "true")
    git("--git-dir", str(path), "config", "uploadpack.allowAnySHA1InWant", "true")


def make_project(path: Path) -> None:
    """The shipped map with the local forge and a fork set; patches/put_metric as shipped."""
    path.mkdir()
    text = (ROOT / "branches.yaml").read_text(encoding="utf-8")
    local, count = re.subn(r"(?m)^forge: gitcode\b", "forge: local", text)
    local, forks = re.subn(r"(?m)^fork: .*$", "fork: acceptance/pytorch", local)
    if count != 1 or forks != 1:
        raise SystemExit("the shipped branches.yaml has no 'forge: gitcode' or 'fork:' line to "
                         "switch")
    (path / "branches.yaml").write_text(local, encoding="utf-8")
    shutil.copytree(ROOT / "patches" / "put_metric", path / "patches" / "put_metric")


def pr_bodies(project: Path) -> dict[str, str]:
    with sqlite3.connect(f"file:{project / '.backport' / 'forge.sqlite'}?mode=ro",
                         uri=True) as db:  # fmt: skip
        return dict(db.execute("SELECT base, body FROM prs WHERE state = 'open'").fetchall())


def evidence_problems(branch: str, body: str | None) -> list[str]:
    if body is None:
        return [f"{branch}: no open PR"]
    torch, torch_npu = EXPECTED[branch]
    block = body.split("<!-- api-validation-evidence:start -->", 1)[-1]
    problems = []
    if not re.search(rf"(?m)^TARGET_BRANCH={re.escape(branch)}$", block):
        problems.append(f"{branch}: evidence names another target branch")
    if not re.search(rf"(?m)^TORCH={re.escape(torch)}(\+\S+)?$", block):
        problems.append(f"{branch}: evidence does not name torch {torch}")
    if not re.search(rf"(?m)^TORCH_NPU={re.escape(torch_npu)}$", block):
        problems.append(f"{branch}: evidence does not name torch_npu {torch_npu}")
    if not re.search(r"(?m)^Ran 7 tests in [0-9.]+s\s*\nOK$", block):
        problems.append(f"{branch}: evidence does not show 'Ran 7 tests … OK'")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--skip-setup", action="store_true", help="do not run env setup")
    args = parser.parse_args()
    real = os.environ.get("BACKPORT_REAL_REPO")
    if not real or not Path(real).is_dir():
        print("set BACKPORT_REAL_REPO to a local git copy of Ascend/pytorch", file=sys.stderr)
        return 2
    if not args.skip_setup:
        print("== backport env setup (shipped branches.yaml)", flush=True)
        start = time.monotonic()
        setup = backport("env", "setup", cwd=ROOT, capture=False)
        print(f"   env setup exit {setup.returncode} in {time.monotonic() - start:.0f}s")
        if setup.returncode != 0:
            return 1
    work = Path(tempfile.mkdtemp(prefix="backport-acceptance-"))
    try:
        make_upstream(Path(real), work / "upstream.git")
        share_objects(Path(real), work / "fork.git")  # no branches: an empty fork
        project = work / "project"
        make_project(project)
        env = {"BACKPORT_UPSTREAM_URL": str(work / "upstream.git"),
               "BACKPORT_FORK_URL": str(work / "fork.git"),
               "BACKPORT_CACHE": str(work / "cache")}  # fmt: skip
        print("== backport apply --api put_metric (local forge, real pre-states)", flush=True)
        start = time.monotonic()
        applied = backport("apply", "--api", "put_metric", "--json", cwd=project, env=env)
        wall = time.monotonic() - start
        if applied.returncode not in (0, 1) or not applied.stdout.strip():
            print(applied.stderr, file=sys.stderr)
            return 1
        branches = json.loads(applied.stdout)["branches"]
        bodies = pr_bodies(project)
        print(f"\n{'branch':<9} {'torch':<14} {'torch_npu':<13} {'status':<8} "
              f"{'result':<32} time")  # fmt: skip
        problems: list[str] = []
        for b in branches:
            target, test, found = b["target"], b.get("test") or {}, b.get("env") or {}
            summary = test.get("summary") or b.get("message") or ""
            if not isinstance(summary, str):
                summary = ", ".join(summary)
            summary = " ".join(summary.split())
            duration = f"{test['duration']:.2f}s" if test.get("duration") is not None else "-"
            print(f"{target:<9} {found.get('torch') or '-':<14} {found.get('torch_npu') or '-':<13} "
                  f"{b['status']:<8} {summary[:32]:<32} {duration}")  # fmt: skip
            if b["status"] != "done":
                problems.append(f"{target}: {b['status']}: {b.get('message')}")
            problems += evidence_problems(target, bodies.get(target))
        print(f"\napply: exit {applied.returncode}, {wall:.1f}s wall clock")
        for problem in problems:
            print(f"PROBLEM: {problem}")
        if not problems:
            print("every PR body's evidence names its branch's own torch and torch_npu")
        if args.keep:
            print(f"kept {work}")
        return 1 if problems else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
