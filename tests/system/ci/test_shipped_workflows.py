"""The shipped CI workflows, run as their CI would run them (tests/fakes/workflow_harness.py):
against a local upstream, the repository fetched over HTTP with the token in a header, pip
installing backport from the workflow's own step, and no branch environment on the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.fakes.git_http import GitHttp
from tests.fakes.workflow_harness import GITCODE, GITHUB, WorkflowRun, load_workflow
from tests.helpers.plain_patch import add_plain_patch_set
from tests.helpers.project import ROOT, TORCH_PYTHON, edit_config, git, needs_torch, run_app
from tests.helpers.project import TOKEN as PROJECT_TOKEN
from tests.helpers.upstream import change_upstream_branch

from .conftest import map_repository, pip_offline

EXAMPLES = ROOT / "examples" / "ci"
TOKEN = "gc-user-token-7d1e"  # the repository secret GITCODE_TOKEN
REPOSITORY = "ascend-ci/backport-map"


OWN_CODE = "the checkout's own backport ran"


def tamper(repo: Path) -> str:
    """A PR that changes the tool itself (the map repository holds backport's source): its
    code, if anything ran it, stops at once; the new head."""
    init = repo / "backport" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + f"raise SystemExit({OWN_CODE!r})\n",
                    encoding="utf-8")
    git(repo, "commit", "-q", "-am", "a PR that changes backport")
    return git(repo, "rev-parse", "HEAD")


def run_gitcode_check(sandbox, tmp_path: Path, wheelhouse: Path, token: str = TOKEN,
                      changed: bool = False):
    repo, sha = map_repository(sandbox, tmp_path / "map")
    if changed:
        sha = tamper(repo)
    served = tmp_path / "served"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(served / f"{REPOSITORY}.git"))
    with GitHttp(served, TOKEN) as http:
        run = WorkflowRun(GITCODE, EXAMPLES / "gitcode-check.yml", repo=repo, sha=sha,
                          repository=REPOSITORY, event_name="push",
                          event={"after": sha, "repository": {"full_name": REPOSITORY}},
                          tmp=tmp_path / "ci", secrets={"GITCODE_TOKEN": token},
                          env=pip_offline(wheelhouse), server_url=http.url)
        (job,) = run.run_all()
    return job, http.requests


def run_github_check(sandbox, tmp_path: Path, wheelhouse: Path, tool_cache: Path,
                     changed: bool = False):
    repo, sha = map_repository(sandbox, tmp_path / "map")
    if changed:
        sha = tamper(repo)
    run = WorkflowRun(GITHUB, EXAMPLES / "github-check.yml", repo=repo, sha=sha,
                      repository=REPOSITORY, event_name="push", event={"after": sha},
                      tmp=tmp_path / "ci", env=pip_offline(wheelhouse), tool_cache=tool_cache)
    (job,) = run.run_all()
    return job, run


def _rows(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if line.startswith("| ")]


def test_gitcode_check_passes_on_a_clean_set_with_no_environment_here(sandbox, tmp_path,
                                                                      wheelhouse):
    """A clean set passes with no environment built here. The commit is a PR that changes
    backport's own code: the pinned backport checks it (that code never runs), and only the
    fetch step holds the token."""
    job, requests = run_gitcode_check(sandbox, tmp_path, wheelhouse, changed=True)
    assert job.ok and OWN_CODE not in job.log, job.log
    assert job.steps[0].secrets == ("GITCODE_TOKEN",)
    assert all(not s.secrets for s in job.steps[1:]) and job.exposed == []
    output = job.step("Check every patch set").output
    assert '"ok": true' in output and "is not built here" in output, output
    rows = _rows(job.summary)  # the table on the run's page
    assert rows[0] == "| subject | check | result | detail |"
    assert any(r.startswith("| put_metric on v2.11.0 | applies | ok |") for r in rows), rows
    assert any("| environment | warn |" in r for r in rows), rows
    assert requests and all(authorised for _path, authorised in requests)  # token in a header
    assert TOKEN not in job.log


def test_gitcode_check_fails_on_a_conflicting_set(sandbox, tmp_path, wheelhouse):
    change_upstream_branch(sandbox.upstream, "v2.11.0", tmp_path)
    job, _requests = run_gitcode_check(sandbox, tmp_path, wheelhouse)
    assert not job.ok
    assert job.step("Check every patch set").ran and not job.step("Check every patch set").ok
    assert [s.ok for s in job.steps[:2]] == [True, True], job.log
    rows = _rows(job.summary)
    assert any(r.startswith("| put_metric on v2.11.0 | applies | FAIL |") for r in rows), rows


def test_gitcode_check_fetch_needs_the_token(sandbox, tmp_path, wheelhouse):
    """Without the right secret the private repository is not read: the first step fails."""
    job, requests = run_gitcode_check(sandbox, tmp_path, wheelhouse, token="wrong-token")
    assert not job.steps[0].ok and not job.steps[1].ran, job.log
    assert requests and not any(authorised for _path, authorised in requests)
    assert "wrong-token" not in job.log


def test_github_check_passes_clean_and_fails_on_a_conflict(sandbox, tmp_path, wheelhouse,
                                                           tool_cache):
    """The clean commit is a PR that changes backport's own code: the pinned backport checks
    it (that code never runs). setup-python's Python is the job's own copy of the tool cache's."""
    job, run = run_github_check(sandbox, tmp_path / "clean", wheelhouse, tool_cache, changed=True)
    assert job.ok and OWN_CODE not in job.log, job.log
    python = next((tmp_path / "clean" / "ci" / "jobs").glob("*-check")) / "python"
    assert (python / "bin" / "pip").read_text(encoding="utf-8").startswith(f"#!{python}/bin/")
    assert list(python.glob("lib/python3*/site-packages/backport"))
    assert not list((tool_cache / "python").glob("lib/python3*/site-packages/backport"))
    report = json.loads((tmp_path / "clean" / "ci" / "artifacts" / "backport-check" /
                         "backport-check.json").read_text(encoding="utf-8"))
    assert report["ok"] is True and any("is not built here" in w for w in report["warnings"])
    assert _rows(job.summary)[0] == "| subject | check | result | detail |"

    change_upstream_branch(sandbox.upstream, "v2.11.0", tmp_path)
    job, run = run_github_check(sandbox, tmp_path / "conflict", wheelhouse, tool_cache)
    check = job.step("Check every patch set")
    assert check.ran and not check.ok, job.log  # no pipe hides the exit status
    assert job.step("Show the report").ran and job.step("Keep the report").ran
    report = json.loads(job.step("Show the report").output)
    assert report["ok"] is False
    assert [p.split(":")[0] for p in report["problems"]] == ["put_metric on v2.11.0"]


APPLIED = "plain_torch"  # the patch set the apply jobs run


def _apply_map(sandbox, tmp_path: Path) -> tuple[Path, str]:
    """The map repository of a team whose NPU host for v2.7.1 is this machine (the torch venv),
    its forge the stand-in GitCode; each environment placed on runner tags. Its patch set
    APPLIED has a plain test over torch: the subject is the job's steps, not what the branch's
    test imports (tests/helpers/plain_patch.py)."""
    def place(data: dict) -> None:
        for env in data["environments"].values():
            env["ci"] = {"runs_on": ["self-hosted", "npu", "torch-2.13"]}
    edit_config(sandbox, place)
    add_plain_patch_set(sandbox, tmp_path, APPLIED, ["v2.7.1", "v2.11.0", "v2.12.0", "master"])
    config = yaml.safe_load(sandbox.config.read_text(encoding="utf-8"))
    repo, _sha = map_repository(sandbox, tmp_path / "map", keep_environments=True)
    assert yaml.safe_load((repo / "branches.yaml").read_text(encoding="utf-8")) == config
    printed = run_app(repo, "matrix", "--api", APPLIED, "--format", "gitcode")
    assert printed.code == 0, printed.err
    (repo / ".gitcode" / "workflows").mkdir(parents=True)
    (repo / ".gitcode" / "workflows" / "backport-apply.yml").write_text(printed.out,
                                                                         encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the apply pipeline, from backport matrix")
    return repo, git(repo, "rev-parse", "HEAD")


@needs_torch
def test_gitcode_apply_job_opens_the_branch_pr(sandbox, gitcode, tmp_path, wheelhouse):
    """One job of the pipeline `matrix --format gitcode` wrote, run on the host of its branch:
    it fetches, installs, checks the environment, applies, tests, pushes and opens one PR."""
    repo, sha = _apply_map(sandbox, tmp_path)
    served = tmp_path / "served"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(served / f"{REPOSITORY}.git"))
    with GitHttp(served, PROJECT_TOKEN) as http:
        run = WorkflowRun(GITCODE, repo / ".gitcode" / "workflows" / "backport-apply.yml",
                          repo=repo, sha=sha, repository=REPOSITORY,
                          event_name="workflow_dispatch", event={}, tmp=tmp_path / "ci",
                          secrets={"GITCODE_TOKEN": PROJECT_TOKEN},
                          env=pip_offline(wheelhouse), server_url=http.url)
        assert list(run.data["jobs"]) == [
            "apply_plain_torch_v2_7_1", "apply_plain_torch_v2_11_0", "apply_plain_torch_v2_12_0",
            "apply_plain_torch_master"]
        job = run.run_job("apply_plain_torch_v2_7_1", {})
    assert job.ok, job.log
    (pr,) = gitcode.open_prs()
    assert (pr.base_ref, pr.head_ref) == ("v2.7.1", "test-plain-torch-v2.7.1")
    assert "HEAD_COMMIT=" in pr.body and "test_exit_code=0" in pr.body
    assert job.step("Apply and test").secrets == () and job.exposed == []
    assert job.step("Publish").secrets == ("GITCODE_TOKEN",)
    assert "skipped on request" not in pr.body  # the publish step kept the tested result
    assert PROJECT_TOKEN not in job.log


def test_github_apply_matrix_job_opens_the_branch_pr(sandbox, gitcode, tmp_path, wheelhouse,
                                                    tool_cache):
    """The plan job's output, expanded as GitHub expands it: one job per target, each on the
    runner tags of its environment's `ci:` entry; then its v2.7.1 entry, run as GitHub would
    run it on that host (the torch venv)."""
    repo, sha = _apply_map(sandbox, tmp_path)
    run = WorkflowRun(GITHUB, EXAMPLES / "github-apply.yml", repo=repo, sha=sha,
                      repository=REPOSITORY, event_name="workflow_dispatch",
                      event={"inputs": {"api": APPLIED}}, tmp=tmp_path / "ci",
                      inputs={"api": APPLIED}, secrets={"GITCODE_TOKEN": PROJECT_TOKEN},
                      env=pip_offline(wheelhouse), tool_cache=tool_cache)
    plan = run.run_job("plan", {})
    assert plan.ok, plan.log
    run.outputs["plan"] = plan.outputs
    entries = run.matrix("apply")
    assert [e["branch"] for e in entries] == ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
    assert all(e["runs_on"] == ["self-hosted", "npu", "torch-2.13"] for e in entries)
    assert load_workflow(EXAMPLES / "github-apply.yml")["jobs"]["apply"]["runs-on"] == \
        "${{ matrix.runs_on }}"
    if not TORCH_PYTHON:
        pytest.skip("the apply job needs BACKPORT_TEST_PYTHON (the torch venv)")
    (entry,) = [e for e in entries if e["branch"] == "v2.7.1"]
    job = run.run_job("apply", entry)
    assert job.ok, job.log
    (pr,) = gitcode.open_prs()
    assert (pr.base_ref, pr.head_ref) == ("v2.7.1", "test-plain-torch-v2.7.1")
    assert job.step("Show this branch as GitCode shows it").ok
    assert (tmp_path / "ci" / "artifacts" / f"backport-{APPLIED}-v2.7.1" / "runs").is_dir()
    assert PROJECT_TOKEN not in job.log
