"""`check` warns when the hand-written body names a path of the target repository that a target
lacks (issue 30 item 4); the shipped body names only files that exist."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backport.config import load_project
from backport.pipeline.check import absent_named_paths, named_paths
from tests.helpers.gitrepos import clone, commit_file, git
from tests.helpers.project import ROOT, run_app

ONLY_MASTER = "test/distributed/elastic/metrics/test_master_only.py"
COMMUNITY = "test/distributed/elastic/agent/server/test/api_test.py"  # PyTorch's, not Ascend's


def test_check_warns_where_a_path_the_body_names_is_absent(sandbox, tmp_path: Path) -> None:
    work = clone(sandbox.upstream, tmp_path / "edit", branch="master")
    commit_file(work, ONLY_MASTER, "import unittest\n", "test: a master-only file")
    git(work, "push", "--quiet", "origin", "master")
    body = sandbox.project / "patches" / "put_metric" / "body.md"
    body.write_text(f"## 官方用例调查\n\n- 社区 `{COMMUNITY}` 只用 mock。\n"
                    f"- 参考 `{ONLY_MASTER}` 与 `test/distributed/elastic/metrics/"
                    "test_metrics_api.py`。\n", encoding="utf-8")

    result = run_app(sandbox.project, "check", "--json")
    assert result.code == 0, result.out + result.err  # a warning, not a problem
    warned = [f for f in result.json()["findings"] if f["check"] == "body paths"]
    assert sorted(f["subject"] for f in warned) == ["put_metric on v2.11.0", "put_metric on v2.12.0",
                                                    "put_metric on v2.7.1"]
    for finding in warned:
        assert finding["warning"] is True
        branch = finding["subject"].rsplit(" ", 1)[1]
        assert finding["detail"] == (f"patches/put_metric/body.md line 4 names {ONLY_MASTER}, "
                                     f"which is not on branch {branch}")
    assert result.json()["problems"] == []
    assert len([w for w in result.json()["warnings"] if "body.md" in w]) == 3


def test_the_shipped_body_names_the_community_test_by_its_real_name() -> None:
    body = (ROOT / "patches" / "put_metric" / "body.md").read_text(encoding="utf-8")
    assert f"`{COMMUNITY}`" in body
    assert "agent/server/test/api.py`" not in body


REAL_REPO = os.environ.get("BACKPORT_REAL_REPO")


@pytest.mark.skipif(not REAL_REPO, reason="BACKPORT_REAL_REPO (a copy of Ascend/pytorch) not set")
def test_the_shipped_body_names_no_ascend_path_a_real_target_lacks() -> None:
    ps = load_project(ROOT / "branches.yaml").patch_sets["put_metric"]
    paths = [path for path, _ in named_paths(ps.body or "")]
    assert "test/distributed/elastic/metrics/test_metrics_api.py" in paths and COMMUNITY in paths
    bases = {target: target for target in ps.branches}  # the mirror's own branch heads
    assert absent_named_paths(Path(str(REAL_REPO)), ps, bases) == []
