"""The SQLite local forge: process safety, URLs, read-only behaviour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.forge.local import LocalForge
from tests.helpers.forge import BASE, BRANCH, FORK, UPSTREAM
from tests.helpers.local_web import set_state

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


def test_url_and_numbering(local: LocalForge) -> None:
    first = local.create_pr(BRANCH, BASE, "t", "b")
    second = local.create_pr(BRANCH, "master", "t", "b")
    assert first.url == f"local://{UPSTREAM}/pull/{first.number}"
    assert second.number == first.number + 1


def test_reads_do_not_create_the_database(local: LocalForge) -> None:
    assert local.find_open_pr(BRANCH, BASE) is None
    assert local.list_prs("all") == []
    local.preflight()
    assert not local.path.exists()
    with pytest.raises(BackportError):
        local.get_pr(1)
    assert not local.path.exists()


def test_database_file_is_private(local: LocalForge) -> None:
    local.create_pr(BRANCH, BASE, "t", "b")
    assert local.path.stat().st_mode & 0o077 == 0


def test_other_upstream_in_the_same_file_is_separate(local: LocalForge) -> None:
    pr = local.create_pr(BRANCH, BASE, "t", "b")
    other = LocalForge(local.path, upstream="Other/repo", fork=FORK)
    assert other.find_open_pr(BRANCH, BASE) is None
    with pytest.raises(BackportError):
        other.get_pr(pr.number)


def test_a_pr_the_web_merged_reads_merged_and_extras(local: LocalForge) -> None:
    pr = local.create_pr(BRANCH, BASE, "t", "b", draft=True)
    assert pr.draft
    assert set_state(local, pr.number, "merged").state == "merged"
    assert local.find_open_pr(BRANCH, BASE) is None
    with pytest.raises(BackportError):
        local.link_issue(999, 1)
    assert json.dumps(local.decorations(pr.number))
