"""`/backport` on a PR that names no API and links no issue goes on without a question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backport.demo.sandbox import Sandbox
from tests.helpers.merged_pr import merged_pr
from tests.helpers.project import TOKEN, run_app
from tests.helpers.source_pr import code_only_pr, source_server

NUMBER = 5120
FORK = "lgxxx/pytorch"


def comment_event(tmp: Path, body: str, login: str) -> Path:
    path = tmp / "comment.json"
    path.write_text(json.dumps({"action": "created", "pull_request": {"number": NUMBER},
                                "comment": {"id": 777, "body": body, "user": {"login": login}}}),
                    encoding="utf-8")
    return path


def trigger(sandbox: Sandbox, *args: str):
    return run_app(sandbox.project, "trigger", "--skip-tests", *args,
                   env={"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
                        "BACKPORT_CACHE": str(sandbox.cache)})


@pytest.fixture
def gitcode(sandbox: Sandbox):
    with source_server(sandbox, NUMBER) as fake:
        fake.permissions = {"maintainer1": "write"}
        yield fake


def test_a_backport_comment_on_a_pr_without_api_or_issue_opens_the_pr(sandbox, gitcode,
                                                                       tmp_path):
    pr = merged_pr(sandbox, gitcode, issues=())
    pr.body = "修复一个问题。\n"  # no API= line, no API：`…`
    event = comment_event(tmp_path, "/backport v2.12.0", "maintainer1")
    result = trigger(sandbox, "--event", str(event), "--branch", "v2.12.0")
    assert result.code == 0, result.err
    assert "required off a terminal" not in result.err
    (opened,) = [p for p in gitcode.open_prs() if p.head_repo == FORK]
    assert opened.base_ref == "v2.12.0" and opened.issues == []
    assert f"Ascend/pytorch!{NUMBER}" in opened.body and "API：" not in opened.body


def test_a_backport_comment_on_a_pr_changing_no_test_opens_a_pr_saying_no_test_ran(
        sandbox, gitcode, tmp_path):
    code_only_pr(sandbox, gitcode, "torch_npu/csrc/foo.cpp", "fix: foo on every device")
    event = comment_event(tmp_path, "/backport v2.12.0", "maintainer1")
    result = trigger(sandbox, "--event", str(event), "--branch", "v2.12.0")  # --skip-tests too
    assert result.code == 0, result.err
    (opened,) = [p for p in gitcode.open_prs() if p.head_repo == FORK]
    assert opened.base_ref == "v2.12.0" and not opened.draft
    assert "torch_npu/csrc/foo.cpp" in opened.body
    assert "RESULT: not run (no test: the source PR adds or changes no test)" in opened.body
    assert "本 PR 未经本地测试验证" in opened.body and "skip-tests" not in opened.body
