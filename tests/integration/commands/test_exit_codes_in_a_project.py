"""The README's exit codes in a project with its repositories: 2 for a missing --repo folder or
token, 1 while a branch is not finished, 0 once every branch is done."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.project import edit_config, run_app
from tests.helpers.runs import apply


def test_new_with_a_missing_repo_folder_exits_2(sandbox, tmp_path: Path) -> None:
    result = run_app(sandbox.project, "new", "x", "--from", "HEAD", "--repo",
                     str(tmp_path / "missing"), "--api", "a.b", "--issue", "1")
    assert result.code == 2, result.err
    assert result.err.strip() == (f"error: --repo {tmp_path / 'missing'}: no such folder; name "
                                  "the clone that holds the commits of --from HEAD")


def test_trigger_and_apply_without_a_token_exit_2(sandbox, tmp_path: Path) -> None:
    def to_gitcode(data: dict) -> None:
        data["forge"] = "gitcode"
        data["api_url"] = "http://127.0.0.1:9/api/v5"
    edit_config(sandbox, to_gitcode)
    no_token = {"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "", "HOME": str(tmp_path)}
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "merge", "pull_request": {"number": "5",
                                                                     "state": "merged"}}))
    result = run_app(sandbox.project, "trigger", "--event", str(event), env=no_token)
    assert result.code == 2, result.err
    applied = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                      env=no_token)
    assert applied.code == 2, applied.err
    assert "no GitCode token" in applied.err


def test_status_exits_1_while_a_branch_is_not_finished_and_0_once_all_are(sandbox) -> None:
    apply(sandbox, skip_tests=True, no_push=True)  # stopped before the push, as an interrupt
    assert run_app(sandbox.project, "status").code == 1
    apply(sandbox, skip_tests=True)
    done = run_app(sandbox.project, "status")
    assert done.code == 0, done.out + done.err
