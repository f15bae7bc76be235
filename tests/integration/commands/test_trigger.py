"""`backport trigger`: `/backport` from the PR page, read from a CI event file, against the
GitCode stand-in (real HTTP on 127.0.0.1) and the sandbox's real upstream repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backport.demo.sandbox import Sandbox
from backport.report.summary import MARKER
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


def comment_event(tmp: Path, body: str, login: str, *, comment_id: int = 777,
                  action: str = "created") -> Path:
    comment = {"id": comment_id, "body": body, "user": {"login": login}}
    data = {"action": action, "pull_request": {"number": NUMBER}, "comment": comment}
    path = tmp / f"event-{comment_id}-{action}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def merge_event(tmp: Path) -> Path:
    path = tmp / "merge.json"
    path.write_text(json.dumps({"action": "merge", "pull_request": {
        "number": NUMBER, "state": "merged", "merged": True}}), encoding="utf-8")
    return path


def trigger(sandbox: Sandbox, *args: str, env: dict[str, str] | None = None):
    return run_app(sandbox.project, "trigger", "--skip-tests", *args,
                   env={"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
                        "BACKPORT_CACHE": str(sandbox.cache), **(env or {})})


def ours(gitcode: FakeGitCode) -> dict[str, int]:
    return {p.base_ref: p.number for p in gitcode.open_prs() if p.head_repo == FORK}


def comments(gitcode: FakeGitCode) -> list[str]:
    return [c["body"] for c in gitcode.prs[NUMBER].comments]


def test_a_maintainers_request_on_a_merged_pr_backports_that_branch(sandbox, gitcode, tmp_path):
    merged_pr(sandbox, gitcode)
    event = comment_event(tmp_path, "/backport v2.12.0", "maintainer1")
    result = trigger(sandbox, "--event", str(event))
    assert result.code == 0, result.err
    assert list(ours(gitcode)) == ["v2.12.0"]
    (summary,) = comments(gitcode)  # the answer: the summary, no reply
    assert MARKER in summary and f"!{ours(gitcode)['v2.12.0']}" in summary


def test_each_matrix_job_does_its_own_requested_branch(sandbox, gitcode, tmp_path):
    merged_pr(sandbox, gitcode)
    event = comment_event(tmp_path, "/backport", "maintainer1")
    env = {"ATOMGIT_EVENT_PATH": str(event)}  # the event file the CI names
    outs = {}
    for branch in ("master", "v2.11.0", "v2.7.1"):
        result = trigger(sandbox, "--branch", branch, env=env)
        assert result.code == 0, result.err
        outs[branch] = result.out
    assert sorted(ours(gitcode)) == ["v2.11.0", "v2.7.1"]  # never the PR's base
    assert "master was not asked for" in outs["master"]
    (summary,) = comments(gitcode)
    assert all(f"!{n}" in summary for n in ours(gitcode).values())


def test_a_reader_gets_one_reply_and_nothing_else(sandbox, gitcode, tmp_path):
    merged_pr(sandbox, gitcode)
    event = comment_event(tmp_path, "/backport v2.12.0", "reader1")
    plan = trigger(sandbox, "--event", str(event), "--plan")  # the one job that answers
    assert plan.code == 0, plan.err
    assert plan.out.strip().splitlines()[-1] == "branches="
    for branch in ("v2.12.0", "v2.11.0"):  # branch jobs run anyway: they answer nobody
        result = trigger(sandbox, "--event", str(event), "--branch", branch)
        assert result.code == 0, result.err
        assert "no write permission" in result.out
    assert ours(gitcode) == {}
    (reply,) = comments(gitcode)
    assert "@reader1" in reply and "写权限" in reply
    assert not (sandbox.project / "patches" / f"pr-{NUMBER}").exists()


def test_an_unknown_branch_gets_one_reply_naming_it(sandbox, gitcode, tmp_path):
    merged_pr(sandbox, gitcode)
    event = comment_event(tmp_path, "/backport v2.12.0 v9.9.9", "maintainer1")
    result = trigger(sandbox, "--event", str(event))
    assert result.code == 0, result.err
    assert ours(gitcode) == {}
    (reply,) = comments(gitcode)
    assert "`v9.9.9`" in reply and "`v2.12.0`" in reply


def test_a_request_on_an_open_pr_is_recorded_and_run_at_merge(sandbox, gitcode, tmp_path):
    pr = merged_pr(sandbox, gitcode, state="open")
    gitcode.add_comment(NUMBER, "/backport v2.11.0", author="maintainer1")
    gitcode.add_comment(NUMBER, "/backport v2.7.1", author="reader1")  # not obeyed
    event = comment_event(tmp_path, "/backport v2.11.0", "maintainer1")
    result = trigger(sandbox, "--event", str(event))
    assert result.code == 0, result.err
    assert ours(gitcode) == {}
    recorded = comments(gitcode)[-1]
    assert "已记录" in recorded and "`v2.11.0`" in recorded

    land(sandbox, gitcode, pr)
    for branch in ("v2.12.0", "v2.11.0", "v2.7.1"):
        result = trigger(sandbox, "--event", str(merge_event(tmp_path)), "--branch", branch)
        assert result.code == 0, result.err
    assert list(ours(gitcode)) == ["v2.11.0"]
    assert sum(MARKER in body for body in comments(gitcode)) == 1


@pytest.mark.parametrize(("payload", "says"), [
    ({"action": "created", "comment": {"body": "/backport", "user": {"login": "m"}}},
     "names no PR"),
    ({"action": "created", "pull_request": {"number": NUMBER},
      "comment": {"body": "  ", "user": {"login": "m"}}}, "is empty"),
    ({"action": "created", "issue": {"number": 3}, "comment": {"body": "/backport",
                                                               "user": {"login": "m"}}},
     "names no PR"),
])
def test_a_payload_without_a_pr_or_with_an_empty_comment_is_refused(sandbox, gitcode, tmp_path,
                                                                     payload, says):
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    result = trigger(sandbox, "--event", str(event))
    assert result.code == 2
    assert says in result.err and str(event) in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert [r for r in gitcode.requests if r.method != "GET"] == []


def test_a_comment_that_is_no_request_does_nothing(sandbox, gitcode, tmp_path):
    event = comment_event(tmp_path, "LGTM, /backport later", "maintainer1")
    result = trigger(sandbox, "--event", str(event))
    assert result.code == 0, result.err
    assert "not a /backport command" in result.out
    assert gitcode.requests == []


def test_a_branch_the_map_lacks_is_a_usage_error(sandbox, gitcode, tmp_path):
    event = comment_event(tmp_path, "/backport", "maintainer1")
    result = trigger(sandbox, "--event", str(event), "--branch", "v9.9")
    assert result.code == 2
    assert "--branch v9.9 is not a target of" in result.err and "v2.7.1" in result.err
    assert gitcode.requests == []


def test_without_the_token_one_sentence_and_no_request(sandbox, gitcode, tmp_path):
    event = comment_event(tmp_path, "/backport", "maintainer1")
    result = run_app(sandbox.project, "trigger", "--event", str(event),
                     env={"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "",
                          "BACKPORT_CACHE": str(sandbox.cache)})
    assert result.code == 2  # a missing token is a configuration error, as for apply
    assert "GITCODE_TOKEN" in result.err and len(result.err.strip().splitlines()) == 1
    assert gitcode.requests == []
