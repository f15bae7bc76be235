"""The shipped `/backport` workflows, run as their CI would run them (the workflow harness): a PR
comment's event file, the map repository fetched over HTTP with the token in a header, pip
installing backport in the job, the stand-in GitCode and the sandbox's upstream with PR !N
merged on master."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.report.source_summary import MARKER
from tests.helpers.ci_map import map_repository, pip_offline
from tests.helpers.fake_gitcode import FakeGitCode
from tests.helpers.git_http import GitHttp
from tests.helpers.merged_pr import merged_pr
from tests.helpers.project import ROOT, edit_config, git, needs_torch, run_app
from tests.helpers.project import TOKEN as PROJECT_TOKEN
from tests.helpers.workflow_harness import GITCODE, GITHUB, WorkflowRun, load_workflow

EXAMPLES = ROOT / "examples" / "ci"
MAP = "ascend-ci/backport-map"
UPSTREAM = "Ascend/pytorch"


def _map(sandbox, tmp_path: Path) -> tuple[Path, str, Path]:
    """The map repository (environments kept: this machine is every branch's NPU host), its
    head, and its bare copy's folder for `GitHttp`."""
    def place(data: dict) -> None:
        for env in data["environments"].values():
            env["ci"] = {"runs_on": ["self-hosted", "npu", "torch-2.13"]}
    edit_config(sandbox, place)
    repo, sha = map_repository(sandbox, tmp_path / "map", keep_environments=True)
    served = tmp_path / "served"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(served / f"{MAP}.git"))
    return repo, sha, served


def _comment(number: int, body: str, login: str) -> dict:
    return {"action": "created", "comment": {"id": 9001, "body": body, "user": {"login": login}},
            "pull_request": {"number": number, "base": {"ref": "master"}}}


def _gitcode_run(repo: Path, sha: str, tmp: Path, http: GitHttp, wheelhouse: Path,
                 event: dict) -> WorkflowRun:
    workflow = tmp / "backport-trigger.yml"
    printed = run_app(repo, "matrix", "--trigger", "--format", "gitcode")
    assert printed.code == 0, printed.err
    workflow.write_text(printed.out, encoding="utf-8")
    return WorkflowRun(GITCODE, workflow, repo=repo, sha=sha, repository=UPSTREAM,
                       event_name="pull_request_comment", event=event, tmp=tmp / "ci",
                       secrets={"GITCODE_TOKEN": PROJECT_TOKEN,
                                "BACKPORT_MAP": f"{http.url}/{MAP}.git"},
                       env=pip_offline(wheelhouse), server_url=http.url)


def _ours(gitcode: FakeGitCode) -> list[str]:
    return [p.base_ref for p in gitcode.open_prs() if p.head_repo == "lgxxx/pytorch"]


def test_shipped_gitcode_trigger_pipeline_is_what_matrix_prints():
    printed = run_app(ROOT, "matrix", "--trigger", "--format", "gitcode")
    assert printed.code == 0, printed.err
    assert (EXAMPLES / "gitcode-trigger.yml").read_text(encoding="utf-8") == printed.out
    data = load_workflow(EXAMPLES / "gitcode-trigger.yml")
    assert data["on"]["pull_request_comment"]["comments"] == ["^/backport"]
    assert data["on"]["pull_request"]["types"] == ["merge"]
    assert [j["env"]["BRANCH"] for j in data["jobs"].values()] == ["v2.7.1", "v2.11.0",
                                                                    "v2.12.0", "master"]


@needs_torch
def test_gitcode_maintainers_backport_comment_opens_one_pr_and_one_summary(
        sandbox, gitcode, tmp_path, wheelhouse):
    """`/backport v2.12.0` by a maintainer on a merged PR: every job of the pipeline runs; only
    v2.12.0's acts: one PR, into v2.12.0, and one summary comment on the PR."""
    gitcode.permissions = {"maintainer1": "write"}
    source = merged_pr(sandbox, gitcode)
    repo, sha, served = _map(sandbox, tmp_path)
    with GitHttp(served, PROJECT_TOKEN) as http:
        run = _gitcode_run(repo, sha, tmp_path, http, wheelhouse,
                           _comment(source.number, "/backport v2.12.0", "maintainer1"))
        jobs = run.run_all()
    assert [j.job for j in jobs] == ["trigger_v2_7_1", "trigger_v2_11_0", "trigger_v2_12_0",
                                     "trigger_master"]
    assert all(j.ok for j in jobs), "\n".join(j.log for j in jobs)
    assert _ours(gitcode) == ["v2.12.0"]
    (summary,) = [c["body"] for c in source.comments]
    assert MARKER in summary and "`v2.12.0` | 已完成 | [!" in summary
    assert "v2.7.1 was not asked for" in jobs[0].step("Act on").output
    assert all(PROJECT_TOKEN not in j.log for j in jobs)


def test_gitcode_readers_comment_leads_to_no_pr(sandbox, gitcode, tmp_path, wheelhouse):
    """The same comment by a reader: one reply, nothing else, whichever jobs run."""
    gitcode.permissions = {"reader1": "read"}
    source = merged_pr(sandbox, gitcode)
    repo, sha, served = _map(sandbox, tmp_path)
    with GitHttp(served, PROJECT_TOKEN) as http:
        run = _gitcode_run(repo, sha, tmp_path, http, wheelhouse,
                           _comment(source.number, "/backport v2.12.0", "reader1"))
        jobs = [run.run_job(job, {}) for job in ("trigger_v2_12_0", "trigger_master")]
    assert all(j.ok for j in jobs), "\n".join(j.log for j in jobs)
    assert _ours(gitcode) == []
    (reply,) = [c["body"] for c in source.comments]
    assert "@reader1" in reply and MARKER not in reply


@pytest.mark.parametrize(("event", "planned"), [
    ({"action": "created", "issue": {"number": 1, "pull_request": {}},
      "comment": {"body": "looks good", "user": {"login": "x"}}}, False),
    ({"action": "created", "issue": {"number": 1, "pull_request": {}},
      "comment": {"body": "/backport v2.12.0", "user": {"login": "x"}}}, True),
    ({"action": "closed", "pull_request": {"number": 1, "merged": False}}, False),
    ({"action": "closed", "pull_request": {"number": 1, "merged": True}}, True),
])
def test_github_trigger_plans_only_for_backport_comments_and_merges(tmp_path, event, planned):
    run = WorkflowRun(GITHUB, EXAMPLES / "github-trigger.yml", repo=tmp_path, sha="0" * 40,
                      repository=UPSTREAM, event_name="issue_comment", event=event,
                      tmp=tmp_path / "ci")
    assert run._condition(run.data["jobs"]["plan"].get("if")) is planned


@needs_torch
def test_github_maintainers_backport_comment_opens_one_pr(sandbox, gitcode, tmp_path,
                                                          wheelhouse):
    """GitHub's issue_comment shape: the plan job's matrix, and the v2.12.0 entry run."""
    gitcode.permissions = {"maintainer1": "admin"}
    source = merged_pr(sandbox, gitcode)
    repo, sha, served = _map(sandbox, tmp_path)
    event = {"action": "created", "issue": {"number": source.number, "pull_request": {}},
             "comment": {"id": 1, "body": "/backport v2.12.0", "user": {"login": "maintainer1"}}}
    with GitHttp(served, PROJECT_TOKEN) as http:
        run = WorkflowRun(GITHUB, EXAMPLES / "github-trigger.yml", repo=repo, sha=sha,
                          repository=UPSTREAM, event_name="issue_comment", event=event,
                          tmp=tmp_path / "ci",
                          secrets={"GITCODE_TOKEN": PROJECT_TOKEN,
                                   "BACKPORT_MAP": f"{http.url}/{MAP}.git"},
                          env=pip_offline(wheelhouse))
        plan = run.run_job("plan", {})
        assert plan.ok, plan.log
        run.outputs["plan"] = plan.outputs
        entries = run.matrix("backport")
        assert [e["branch"] for e in entries] == ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
        (entry,) = [e for e in entries if e["branch"] == "v2.12.0"]
        job = run.run_job("backport", entry)
    assert job.ok, job.log
    assert _ours(gitcode) == ["v2.12.0"]
    assert sum(MARKER in c["body"] for c in source.comments) == 1
    assert PROJECT_TOKEN not in job.log + plan.log
