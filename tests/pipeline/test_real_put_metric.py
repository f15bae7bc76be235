"""The shipped put_metric patch on a copy of the real Ascend/pytorch (``BACKPORT_REAL_REPO``):
on today's branch heads upstream has its own test_put_metric, so every branch is
already-present and names upstream's commit; on the branch states before upstream's commits
the patch applies and opens four PRs whose evidence shows test_put_metric ran and passed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from backport.demo.sandbox import write_project
from tests.helpers.project import PATCHES, TORCH_PYTHON, pr_body, rev, run_app

MIRROR = Path(os.environ.get("BACKPORT_REAL_REPO") or "/nonexistent")
pytestmark = pytest.mark.skipif(not MIRROR.is_dir(), reason="BACKPORT_REAL_REPO does not name "
                                "a copy of Ascend/pytorch")
BRANCHES = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
# The commits by which upstream added its own test_put_metric, and their parents.
UPSTREAM = {"v2.7.1": "7519b4613", "v2.11.0": "4ba012229", "v2.12.0": "33cd429d7",
            "master": "1292bcfa1"}
PRE_STATES = {"v2.7.1": "82ea54ed3", "v2.11.0": "d5bd55141", "v2.12.0": "8c57daccf",
              "master": "c6b207c55"}
TEST_FILE = "test/distributed/elastic/metrics/test_metrics_api.py"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "LANG": "C"}).stdout.strip()


def _borrowing(path: Path) -> Path:
    """An empty bare repository that borrows the copy's objects (as a fork on the forge does)."""
    _git("init", "--quiet", "--bare", str(path))
    (path / "objects" / "info" / "alternates").write_text(
        str((MIRROR / "objects").resolve()) + "\n", encoding="utf-8")
    return path


def real_project(tmp: Path, heads: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """Upstream with the four branches at ``heads``, an empty fork, the shipped patch set."""
    upstream = _borrowing(tmp / "upstream.git")
    for branch, ref in heads.items():
        sha = _git("--git-dir", str(MIRROR), "rev-parse", "--verify", f"{ref}^{{commit}}")
        _git("--git-dir", str(upstream), "update-ref", f"refs/heads/{branch}", sha)
    _git("--git-dir", str(upstream), "config", "uploadpack.allowFilter", "true")
    fork = _borrowing(tmp / "fork.git")
    project = tmp / "project"
    write_project(project, upstream, fork, PATCHES, TORCH_PYTHON)
    return project, {"BACKPORT_CACHE": str(tmp / "cache")}


def test_todays_branches_already_have_the_test(tmp_path: Path) -> None:
    project, env = real_project(tmp_path, {b: b for b in BRANCHES})
    result = run_app(project, "apply", "--api", "put_metric", "--json", env=env)
    assert result.code == 0, result.err
    branches = {b["target"]: b for b in result.json()["branches"]}
    for target in BRANCHES:
        branch = branches[target]
        assert branch["status"] == "already-present", branch["message"]
        (present,) = branch["present"]
        assert present["name"] == "ElasticMetricsApiTest.test_put_metric"
        assert present["path"] == TEST_FILE
        assert present["commit"] == UPSTREAM[target]
        assert present["subject"] == "test: add put_metric coverage"
        assert rev(project.parent / "fork.git", f"refs/heads/test-put-metric-{target}") is None
    check = run_app(project, "check", "--api", "put_metric", "--json", env=env)
    assert check.code == 0, check.out
    details = {f["subject"]: f["detail"] for f in check.json()["findings"]
               if f["check"] == "applies"}
    for target in BRANCHES:
        assert details[f"put_metric on {target}"].startswith("already present:")
        assert UPSTREAM[target] in details[f"put_metric on {target}"]


@pytest.mark.skipif(not TORCH_PYTHON, reason="BACKPORT_TEST_PYTHON is not set")
def test_before_upstream_landed_it_four_prs_show_the_test_ran(tmp_path: Path) -> None:
    project, env = real_project(tmp_path, PRE_STATES)
    result = run_app(project, "apply", "--api", "put_metric", "--json", env=env)
    assert result.code == 0, result.err
    for branch in result.json()["branches"]:
        assert branch["status"] == "done", branch["message"]
        assert branch["test"]["patch_tests"] == {"test_put_metric": "ok"}
        evidence = pr_body(project, branch["target"]).split(
            "<!-- api-validation-evidence:start -->", 1)[1]
        assert "\nPATCH_TESTS=test_put_metric ok\n" in evidence
