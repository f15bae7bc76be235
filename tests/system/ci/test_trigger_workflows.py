"""The shipped `/backport` pipeline, run as their CI would run them (the workflow harness): a PR
comment's event file, the map repository fetched over HTTP with the token in a header, pip
installing backport in the job, the stand-in GitCode and the sandbox's upstream with PR !N
merged on master."""

from __future__ import annotations

from pathlib import Path

from backport.report.summary import MARKER
from tests.fakes.git_http import GitHttp
from tests.fakes.gitcode import FakeGitCode
from tests.fakes.workflow_harness import GITCODE, WorkflowRun
from tests.helpers.merged_pr import merged_pr
from tests.helpers.plain_patch import plain_patch_file
from tests.helpers.processes import with_marker
from tests.helpers.project import TOKEN as PROJECT_TOKEN
from tests.helpers.project import edit_config, git, needs_torch, run_app

from .conftest import map_repository, pip_offline

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






@needs_torch
def test_gitcode_maintainers_backport_comment_opens_one_pr_and_one_summary(
        sandbox, gitcode, tmp_path, wheelhouse):
    """`/backport v2.12.0` by a maintainer on a merged PR: the plan names v2.12.0, only that
    branch's job runs: it tests without the token and publishes one PR, into v2.12.0, and one
    summary comment on the PR; no step that ran the PR's code held a secret."""
    gitcode.permissions = {"maintainer1": "write"}
    # The PR's test is a plain one over torch: the subject is the pipeline, not what the test
    # imports (tests/helpers/plain_patch.py).
    source = merged_pr(sandbox, gitcode,
                       patch=plain_patch_file(sandbox, tmp_path, "plain_torch", tmp_path / "pr"))
    repo, sha, served = _map(sandbox, tmp_path)
    with GitHttp(served, PROJECT_TOKEN) as http:
        run = _gitcode_run(repo, sha, tmp_path, http, wheelhouse,
                           _comment(source.number, "/backport v2.12.0", "maintainer1"))
        jobs = run.run_all()
    assert [j.job for j in jobs] == ["plan", "trigger_v2_12_0"]
    assert all(j.ok for j in jobs), "\n".join(j.log for j in jobs)
    assert jobs[0].outputs == {"branches": ",v2.12.0,"}
    assert _ours(gitcode) == ["v2.12.0"]
    (pr,) = [p for p in gitcode.open_prs() if p.head_repo == "lgxxx/pytorch"]
    assert "test/test_plain_torch.py" in pr.body and "test_exit_code=0" in pr.body  # it ran
    (summary,) = [c["body"] for c in source.comments]
    assert MARKER in summary and "`v2.12.0` | 已完成 | [!" in summary
    branch = jobs[1]
    assert branch.step("Apply and test").ran and not branch.step("Apply and test").secrets
    assert branch.step("Publish").secrets == ("GITCODE_TOKEN",)
    assert all(j.exposed == [] for j in jobs)
    assert all(PROJECT_TOKEN not in j.log for j in jobs)
    # nothing the jobs started runs on
    assert with_marker(str(tmp_path / "ci")) == []


def test_gitcode_readers_comment_leads_to_one_reply_and_no_branch_job(sandbox, gitcode, tmp_path,
                                                                      wheelhouse):
    """The same comment by a reader: the plan replies once and names no branch, so no branch
    job runs (no environment built, no comment listed)."""
    gitcode.permissions = {"reader1": "read"}
    source = merged_pr(sandbox, gitcode)
    repo, sha, served = _map(sandbox, tmp_path)
    with GitHttp(served, PROJECT_TOKEN) as http:
        run = _gitcode_run(repo, sha, tmp_path, http, wheelhouse,
                           _comment(source.number, "/backport v2.12.0", "reader1"))
        jobs = run.run_all()
    assert [j.job for j in jobs] == ["plan"], [j.job for j in jobs]
    assert jobs[0].ok, jobs[0].log
    assert _ours(gitcode) == []
    (reply,) = [c["body"] for c in source.comments]
    assert "@reader1" in reply and MARKER not in reply
    assert len(gitcode.requests) <= 4


def test_gitcode_pipeline_on_a_host_refusing_namespaces_runs_no_pr_code(sandbox, gitcode,
                                                                        tmp_path, wheelhouse):
    """The branch job's host refuses namespaces (BACKPORT_SANDBOX_REFUSE=1) and the map does
    not say `isolation: none`: the prepare step refuses in one sentence (exit 2), so neither
    the set is tested nor anything published."""
    gitcode.permissions = {"maintainer1": "write"}
    source = merged_pr(sandbox, gitcode)
    repo, sha, served = _map(sandbox, tmp_path)
    with GitHttp(served, PROJECT_TOKEN) as http:
        run = _gitcode_run(repo, sha, tmp_path, http, wheelhouse,
                           _comment(source.number, "/backport v2.12.0", "maintainer1"))
        run.extra_env["BACKPORT_SANDBOX_REFUSE"] = "1"
        jobs = run.run_all()
    assert [j.job for j in jobs] == ["plan", "trigger_v2_12_0"]
    assert jobs[0].ok, jobs[0].log
    branch = jobs[1]
    prepare = branch.step("Check the permission again")
    assert prepare.ran and not prepare.ok
    assert "refuses PID namespaces" in prepare.output and "isolation: none" in prepare.output
    assert not branch.step("Apply and test").ran and not branch.step("Publish").ran
    assert _ours(gitcode) == [] and source.comments == []
