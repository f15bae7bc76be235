"""The shipped put_metric patch on a copy of the real Ascend/pytorch (``BACKPORT_REAL_REPO``):
on today's branch heads upstream has its own test_put_metric, so every branch is
already-present and names upstream's commit; on the branch states before upstream's commits
the patch applies and opens four PRs whose evidence shows test_put_metric ran and passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.project import TORCH_PYTHON, pr_body, rev, run_app
from tests.helpers.real_repo import (
    BRANCHES,
    PRE_STATES,
    TEST_FILE,
    UPSTREAM,
    needs_mirror,
    real_project,
)

pytestmark = needs_mirror


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
        assert branch["test"]["patch_tests"] == [["test_put_metric", "ok"]]
        evidence = pr_body(project, branch["target"]).split(
            "<!-- api-validation-evidence:start -->", 1)[1]
        assert "\nPATCH_TESTS=test_put_metric ok\n" in evidence
