"""The replay script: its corpus rule on a built repository, one real case when the mirror is set."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import gitrepos as gr

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "verify_real_history.py"
REAL = os.environ.get("BACKPORT_REAL_REPO")


def _load():
    spec = importlib.util.spec_from_file_location("verify_real_history", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _commit(repo: Path, files: dict[str, str], subject: str, date: str) -> None:
    gr.write_files(repo, files)
    gr.git(repo, "commit", "--quiet", "-m", subject, env=gr.git_env(date=date))


def test_corpus_rule(tmp_path: Path) -> None:
    repo = gr.make_repo(tmp_path / "r")
    _commit(repo, {"test/a.py": "0\n"}, "base", "2026-01-01T00:00:00+00:00")
    branches = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
    for b in branches[:-1]:
        gr.git(repo, "branch", b)
    for n, b in enumerate(branches):
        gr.git(repo, "checkout", "--quiet", b)
        when = f"2026-04-0{n + 1}T00:00:00+00:00"
        _commit(repo, {"test/a.py": f"{b}\n"}, "test: on every branch", when)
        _commit(repo, {"test/b.py": f"{b}\n", **({"torch_npu/x.py": "1\n"} if b == "v2.7.1" else {})},
                "test: not only tests on one branch", when)
        if b != "v2.7.1":
            _commit(repo, {"test/c.py": f"{b}\n"}, "test: missing on one branch", when)
        _commit(repo, {"test/d.py": f"{b}\n"}, "test: old", "2026-02-01T00:00:00+00:00")
    gr.git(repo, "checkout", "--quiet", "v2.12.0")
    _commit(repo, {"test/e.py": "1\n"}, "test: twice on v2.12.0", "2026-04-05T00:00:00+00:00")
    _commit(repo, {"test/e.py": "2\n"}, "test: twice on v2.12.0", "2026-04-05T00:00:00+00:00")
    for b in branches:
        if b != "v2.12.0":
            gr.git(repo, "checkout", "--quiet", b)
            _commit(repo, {"test/e.py": f"{b}\n"}, "test: twice on v2.12.0",
                    "2026-04-05T00:00:00+00:00")
    script = _load()
    cases = script.select_cases(repo / ".git", "2026-03-01")
    assert [c.subject for c in cases] == ["test: on every branch"]
    assert set(cases[0].landed) == set(branches)
    assert len(set(cases[0].landed.values())) == 4


@pytest.mark.skipif(not REAL, reason="BACKPORT_REAL_REPO is not set (a mirror of Ascend/pytorch)")
def test_one_real_case_replays_identically(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--limit", "4", "--no-push", "--work", str(tmp_path)],
        capture_output=True, text=True, check=True, timeout=600).stdout
    assert "corpus: 4 cases, 16 pairs" in out
    auto = out.split("### Automatic")[1].split("###")[0]
    assert "| master | all | 4 | 4 (100.0%) | 0 | 0 |" in auto, out


@pytest.mark.skipif(not REAL, reason="BACKPORT_REAL_REPO is not set (a mirror of Ascend/pytorch)")
def test_real_resolutions_carry_down_the_chain(tmp_path: Path) -> None:
    """r078: v2.12.0's hand resolution fits v2.11.0 only with its context lines ignored, and
    the v2.11.0 result then fits v2.7.1; r056: it fits v2.11.0 only entry by entry in
    `.pytorch-disabled-tests.json`, and v2.7.1 (another entry name) stays a conflict."""
    report = tmp_path / "pairs.json"
    subprocess.run([sys.executable, str(SCRIPT), "--case", "r056", "--case", "r078",
                    "--no-push", "--json", str(report)],
                   capture_output=True, text=True, check=True, timeout=600)
    pairs = {(p["case"], p["branch"]): p
             for result in json.loads(report.read_text()) for p in result["resolved"]}
    chained = pairs[("r078", "v2.7.1")]
    assert (chained["outcome"], chained["source"]) == ("identical", "propagated (v2.11.0 <- v2.12.0)")
    loose = pairs[("r078", "v2.11.0")]
    assert (loose["outcome"], loose["source"], loose["loose"]) == (
        "identical", "propagated (v2.12.0)", True)
    entries = pairs[("r056", "v2.11.0")]
    assert (entries["outcome"], entries["merged"]) == ("identical", True)
    left = pairs[("r056", "v2.7.1")]
    assert left["outcome"] == "not-applied"
    assert left["tried"] == ["the v2.11.0 result, itself from the v2.12.0 resolution",
                             "the v2.12.0 resolution"]
