"""The shipped pipelines are what `backport matrix` prints from the shipped map (GitCode apply
and `/backport` trigger, none for GitHub), and no step hides a failure or assumes a tool cache."""

from __future__ import annotations

import pytest

from tests.fakes.workflow_harness import load_workflow
from tests.helpers.project import ROOT, run_app

EXAMPLES = ROOT / "examples" / "ci"


def test_shipped_gitcode_apply_pipeline_is_what_matrix_prints():
    """One source: examples/ci/gitcode-apply.yml is `backport matrix --format gitcode` of the
    shipped branches.yaml and patches/."""
    printed = run_app(ROOT, "matrix", "--api", "put_metric", "--format", "gitcode")
    assert printed.code == 0, printed.err
    assert (EXAMPLES / "gitcode-apply.yml").read_text(encoding="utf-8") == printed.out
    jobs = load_workflow(EXAMPLES / "gitcode-apply.yml")["jobs"]
    assert [j["env"]["BRANCH"] for j in jobs.values()] == ["v2.7.1", "v2.11.0", "v2.12.0",
                                                            "master"]
    assert [j["runs-on"] for j in jobs.values()][0] == ["self-hosted", "npu", "torch-2.7.1"]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yml")))
def test_no_step_hides_a_failure_or_assumes_a_tool_cache(name):
    data = load_workflow(EXAMPLES / name)
    shell = ((data.get("defaults") or {}).get("run") or {}).get("shell")
    for job in data["jobs"].values():
        hosted = isinstance(job["runs-on"], str) and not job["runs-on"].startswith("${{") \
            or "ubuntu-latest" in job["runs-on"]
        for step in job["steps"]:
            script = step.get("run", "")
            if "|" in script.replace("||", "") and shell != "bash":
                assert script.lstrip().startswith("set -euo pipefail"), (name, script)
            assert "|| true" not in script, (name, script)
            if step.get("uses", "").startswith("actions/setup-python"):
                assert hosted, f"{name}: setup-python on a self-hosted job"


def test_shipped_gitcode_trigger_pipeline_is_what_matrix_prints():
    printed = run_app(ROOT, "matrix", "--trigger", "--format", "gitcode")
    assert printed.code == 0, printed.err
    assert (EXAMPLES / "gitcode-trigger.yml").read_text(encoding="utf-8") == printed.out
    data = load_workflow(EXAMPLES / "gitcode-trigger.yml")
    assert data["on"]["pull_request_comment"]["comments"] == ["^/backport"]
    assert data["on"]["pull_request"]["types"] == ["merge"]
    jobs = data["jobs"]
    assert list(jobs)[0] == "plan" and "needs" not in jobs["plan"]
    branch_jobs = [j for name, j in jobs.items() if name != "plan"]
    assert [j["env"]["BRANCH"] for j in branch_jobs] == ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
    assert all(j["needs"] == "plan" and f"',{j['env']['BRANCH']},'" in j["if"]
               for j in branch_jobs)


def test_no_trigger_pipeline_for_github():
    printed = run_app(ROOT, "matrix", "--trigger", "--format", "github")
    assert printed.code == 2 and "GitCode's events only" in printed.err
