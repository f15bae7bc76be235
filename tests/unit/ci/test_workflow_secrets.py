"""Secrets never meet PR code in the shipped pipelines: each workflow, read as its CI reads it,
gives no secret to a step whose commands run code from a branch or a PR, and installs the
pinned backport, never the checkout's own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fakes.workflow_harness import load_workflow, pr_code_with_secrets, runs_pr_code

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "ci"
SHIPPED = sorted(p.name for p in EXAMPLES.glob("*.yml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_no_step_that_runs_pr_code_holds_a_secret(name):
    assert pr_code_with_secrets(load_workflow(EXAMPLES / name)) == []


@pytest.mark.parametrize("name", SHIPPED)
def test_backport_is_the_pinned_wheel(name):
    data = load_workflow(EXAMPLES / name)
    for job in data["jobs"].values():
        env = {**(data.get("env") or {}), **(job.get("env") or {})}
        assert env.get("BACKPORT_PIN", "").startswith("backport=="), (name, env)
        installs = [s["run"] for s in job["steps"] if re.search(r'pip"?\s+install', s.get("run", ""))]
        assert installs and all('"$BACKPORT_PIN"' in run for run in installs), (name, installs)
        assert not any(runs_pr_code({"run": run}) for run in installs), (name, installs)


@pytest.mark.parametrize("name", [n for n in SHIPPED if "apply" in n or "trigger" in n])
def test_tests_run_without_the_token_and_the_publish_step_runs_no_test(name):
    for job_id, job in load_workflow(EXAMPLES / name)["jobs"].items():
        applies = [s for s in job["steps"] if "backport apply" in s.get("run", "")]
        if not applies:
            continue
        test, publish = applies
        assert "--no-push" in test["run"] and "secrets." not in str(test.get("env")), job_id
        assert "--skip-tests" in publish["run"], job_id
        assert "secrets.GITCODE_TOKEN" in str(publish.get("env")), job_id
        assert job["steps"].index(test) < job["steps"].index(publish), job_id


def test_the_check_sees_a_token_next_to_pr_code():
    """The rule itself: a job-wide token next to a step that tests, builds or installs the
    checkout is found; a token only beside git is not."""
    workflow = {"jobs": {"j": {"env": {"GITCODE_TOKEN": "${{ secrets.GITCODE_TOKEN }}"},
                               "steps": [{"name": "fetch", "run": "git fetch x"},
                                         {"name": "install", "run": "pip install ./src"},
                                         {"name": "test", "run": "backport apply --api a"}]}}}
    assert pr_code_with_secrets(workflow) == ["j: install", "j: test"]
    workflow["jobs"]["j"]["steps"][0]["env"] = workflow["jobs"]["j"].pop("env")
    assert pr_code_with_secrets(workflow) == []
    assert not runs_pr_code({"run": "backport apply --api a --skip-tests"})
    assert runs_pr_code({"run": "cd src && backport check --json"})
    assert runs_pr_code({"run": "backport trigger --branch B"})
    assert not runs_pr_code({"run": "backport trigger --plan"})


@pytest.mark.parametrize("name", [n for n in SHIPPED if "trigger" in n])
def test_each_branch_job_refuses_before_any_step_runs_pr_code(name):
    """On a host that refuses namespaces, `trigger --branch B --prepare` exits 2 (it checks the
    isolation before it makes the set) and the job stops there: it must come before every step
    that runs PR code, and be asked without --skip-tests, which would skip the check."""
    for job_id, job in load_workflow(EXAMPLES / name)["jobs"].items():
        runs = [s.get("run", "") for s in job["steps"]]
        prepares = [i for i, run in enumerate(runs) if re.search(r"backport\s+trigger\b[^\n]*"
                                                                 r"--branch[^\n]*--prepare", run)]
        pr_code = [i for i, step in enumerate(job["steps"]) if runs_pr_code(step)]
        if job_id == "plan":
            assert not prepares and not pr_code, job_id
            continue
        assert len(prepares) == 1 and "--skip-tests" not in runs[prepares[0]], job_id
        assert pr_code and all(i > prepares[0] for i in pr_code), job_id
        assert all("backport" in runs[i] for i in pr_code), job_id  # each checks again itself
