"""`backport trigger` against the GitCode stand-in (real HTTP on 127.0.0.1) and the sandbox's
real upstream: which events act, what a request costs, and who is answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backport.demo.sandbox import Sandbox
from tests.fakes.gitcode import FakeGitCode
from tests.helpers.merged_pr import land, merged_pr
from tests.helpers.project import TOKEN, run_app
from tests.helpers.source_pr import source_server

NUMBER = 5120
FORK = "lgxxx/pytorch"


@pytest.fixture
def gitcode(sandbox: Sandbox):
    with source_server(sandbox, NUMBER) as fake:
        fake.permissions = {"maintainer1": "write", "reader1": "read"}
        yield fake


def _event(tmp: Path, data: dict, name: str) -> Path:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def comment_event(tmp: Path, body: str, login: str, action: str = "created") -> Path:
    return _event(tmp, {"action": action, "pull_request": {"number": NUMBER},
                        "comment": {"id": 777, "body": body, "user": {"login": login}}},
                  f"comment-{action}")


def trigger(sandbox: Sandbox, *args: str, env: dict[str, str] | None = None):
    return run_app(sandbox.project, "trigger", "--skip-tests", *args,
                   env={"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
                        "BACKPORT_CACHE": str(sandbox.cache), **(env or {})})


def ours(gitcode: FakeGitCode) -> list[str]:
    return [p.base_ref for p in gitcode.open_prs() if p.head_repo == FORK]


@pytest.mark.parametrize("action", ["edited", "deleted"])
def test_an_edited_or_deleted_comment_does_nothing(sandbox, gitcode, tmp_path, action):
    merged_pr(sandbox, gitcode)
    event = comment_event(tmp_path, "/backport v2.12.0", "maintainer1", action)
    result = trigger(sandbox, "--event", str(event))
    assert result.code == 0, result.err
    (line,) = result.out.strip().splitlines()
    assert action in line and "ignored" in line
    assert gitcode.requests == [] and ours(gitcode) == []


def test_a_github_payload_for_the_gitcode_map_exits_2_before_any_request(sandbox, gitcode,
                                                                         tmp_path):
    merged_pr(sandbox, gitcode)
    event = _event(tmp_path, {"action": "created", "issue": {"number": NUMBER, "pull_request": {}},
                              "comment": {"id": 1, "body": "/backport v2.12.0",
                                          "user": {"login": "maintainer1"}}}, "github")
    result = trigger(sandbox, "--event", str(event))
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1 and "GitHub" in result.err
    assert gitcode.requests == [] and ours(gitcode) == []


def test_backport_later_is_no_request_at_the_merge_either(sandbox, gitcode, tmp_path):
    pr = merged_pr(sandbox, gitcode, state="open")
    gitcode.add_comment(NUMBER, "/backport-later v2.11.0", author="maintainer1")
    land(sandbox, gitcode, pr)
    merge = _event(tmp_path, {"action": "merge", "pull_request": {
        "number": NUMBER, "state": "merged", "merged": True}}, "merge")
    result = trigger(sandbox, "--event", str(merge))
    assert result.code == 0, result.err
    assert "with no /backport request" in result.out
    assert ours(gitcode) == []


def test_a_readers_request_on_a_busy_pr_costs_a_few_requests_and_one_reply(sandbox, gitcode,
                                                                           tmp_path):
    """400 comments on the PR: the plan answers the reader after reading one permission; a
    branch job reads it again and answers nobody; no comment page is ever listed."""
    merged_pr(sandbox, gitcode)
    for i in range(400):
        gitcode.add_comment(NUMBER, f"comment {i}", author=f"user{i % 7}")
    event = comment_event(tmp_path, "/backport v2.12.0", "reader1")
    output = tmp_path / "atomgit-output"
    plan = trigger(sandbox, "--event", str(event), "--plan",
                   env={"ATOMGIT_OUTPUT": str(output)})
    assert plan.code == 0, plan.err
    plan_requests = list(gitcode.requests)
    assert len(plan_requests) <= 4, [(r.method, r.path) for r in plan_requests]
    assert output.read_text(encoding="utf-8") == "branches=\n"
    replies = [c["body"] for c in gitcode.prs[NUMBER].comments[400:]]
    assert len(replies) == 1 and "@reader1" in replies[0]

    gitcode.requests.clear()
    job = trigger(sandbox, "--event", str(event), "--branch", "v2.12.0")
    assert job.code == 0, job.err
    assert len(gitcode.requests) <= 3, [(r.method, r.path) for r in gitcode.requests]
    assert all(r.method == "GET" for r in gitcode.requests)
    assert len(gitcode.prs[NUMBER].comments) == 401 and ours(gitcode) == []
    assert not any(r.path.endswith("/comments") for r in plan_requests + gitcode.requests
                   if r.method == "GET")


def test_a_maintainers_plan_names_the_branches_and_runs_nothing(sandbox, gitcode, tmp_path):
    merged_pr(sandbox, gitcode)
    for i in range(400):
        gitcode.add_comment(NUMBER, f"comment {i}", author=f"user{i % 7}")
    event = comment_event(tmp_path, "/backport v2.12.0 v2.7.1", "maintainer1")
    output = tmp_path / "atomgit-output"
    plan = trigger(sandbox, "--event", str(event), "--plan",
                   env={"ATOMGIT_OUTPUT": str(output)})
    assert plan.code == 0, plan.err
    assert len(gitcode.requests) <= 4
    assert output.read_text(encoding="utf-8") == "branches=,v2.7.1,v2.12.0,\n"
    assert len(gitcode.prs[NUMBER].comments) == 400 and ours(gitcode) == []
    assert not (sandbox.project / "patches" / f"pr-{NUMBER}").exists()


def _merge_event(tmp: Path) -> Path:
    return _event(tmp, {"action": "merge", "pull_request": {
        "number": NUMBER, "state": "merged", "merged": True}}, "merge")


def test_a_merge_after_300_readers_asked_costs_the_plan_at_most_12_requests(sandbox, gitcode,
                                                                           tmp_path):
    """300 readers wrote `/backport` after a maintainer did: who may ask is read once (the
    collaborators listing), not once per reader; the maintainer's request is obeyed."""
    pr = merged_pr(sandbox, gitcode, state="open")
    gitcode.add_comment(NUMBER, "/backport v2.11.0", author="maintainer1")
    for i in range(300):
        gitcode.add_comment(NUMBER, "/backport v2.12.0", author=f"reader{i}")
        if i % 2:
            gitcode.permissions[f"reader{i}"] = "read"  # a member; the others are strangers
    land(sandbox, gitcode, pr)
    output = tmp_path / "atomgit-output"
    plan = trigger(sandbox, "--event", str(_merge_event(tmp_path)), "--plan",
                   env={"ATOMGIT_OUTPUT": str(output)})
    assert plan.code == 0, plan.err
    assert len(gitcode.requests) <= 12, gitcode.counts()
    assert output.read_text(encoding="utf-8") == "branches=,v2.11.0,\n"
    assert "147 older /backport request(s)" in plan.out  # 150 strangers, the newest 3 asked
    gitcode.requests.clear()
    job = trigger(sandbox, "--event", str(_merge_event(tmp_path)), "--branch", "v2.12.0")
    assert job.code == 0, job.err
    assert "v2.12.0 was not asked for" in job.out
    assert len(gitcode.requests) <= 12, len(gitcode.requests)


def test_a_writer_the_listing_misses_is_asked_only_among_the_newest_requests(sandbox, gitcode,
                                                                            tmp_path):
    """A writer the collaborators listing does not show (an organisation's member) is asked
    by login, but only among the newest requests of unlisted users; older ones are said."""
    pr = merged_pr(sandbox, gitcode, state="open")
    gitcode.unlisted = {"orgadmin", "oldadmin"}
    gitcode.permissions |= {"orgadmin": "admin", "oldadmin": "admin"}
    gitcode.add_comment(NUMBER, "/backport v2.7.1", author="oldadmin")
    for i in range(10):
        gitcode.add_comment(NUMBER, "/backport v2.12.0", author=f"reader{i}")
    gitcode.add_comment(NUMBER, "/backport v2.11.0", author="orgadmin")
    land(sandbox, gitcode, pr)
    output = tmp_path / "atomgit-output"
    plan = trigger(sandbox, "--event", str(_merge_event(tmp_path)), "--plan",
                   env={"ATOMGIT_OUTPUT": str(output)})
    assert plan.code == 0, plan.err
    assert len(gitcode.requests) <= 12, len(gitcode.requests)
    assert output.read_text(encoding="utf-8") == "branches=,v2.11.0,\n"
    assert "not read" in plan.out and "oldadmin" not in plan.out
