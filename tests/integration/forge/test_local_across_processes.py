"""The SQLite local forge across processes: racing creates open one PR per branch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from backport.forge.local import LocalForge
from tests.fakes.forge import FORK, UPSTREAM

ROOT = Path(__file__).resolve().parents[3]


RACER = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from backport.forge.local import LocalForge
    db, go, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    forge = LocalForge(db, upstream="Ascend/pytorch", fork="lgxxx/pytorch")
    while not go.exists():
        time.sleep(0.005)
    print(json.dumps([forge.create_pr(f"b{i}", "master", "t", "b").number for i in range(n)]))
""")


def test_processes_racing_create_open_one_pr_per_branch(tmp_path: Path) -> None:
    db, go = tmp_path / "forge.sqlite", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(db), str(go), "15"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(3)]
    time.sleep(0.3)  # let the interpreters start, then release them together
    go.touch()
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outputs.append(json.loads(out))
    assert outputs[0] == outputs[1] == outputs[2]
    forge = LocalForge(db, upstream=UPSTREAM, fork=FORK)
    prs = forge.list_prs("all")
    assert len(prs) == 15 and sorted(p.head for p in prs) == sorted(f"b{i}" for i in range(15))
