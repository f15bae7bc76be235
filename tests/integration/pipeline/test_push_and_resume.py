"""Push failures keep git's reason; bodies say which PRs exist; resume names non-targets."""

from __future__ import annotations

import sqlite3

from tests.helpers.project import run_app


def test_a_rejected_push_keeps_gits_reason_and_output(sandbox):
    hook = sandbox.fork / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'fatal: could not fetch 0123abc from promisor remote' >&2\n"
                    "exit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--branch", "v2.7.1",
                     "--skip-tests", "--json")
    assert result.code == 1
    (branch,) = result.json()["branches"]
    assert branch["status"] == "failed"
    assert "pre-receive hook declined" in branch["message"]
    assert "could not fetch 0123abc from promisor remote" in branch["message"]
    log = sandbox.project / ".backport" / "runs" / "put_metric" / "logs" / "v2.7.1.push.log"
    assert "could not fetch 0123abc" in log.read_text(encoding="utf-8")
    assert str(log) in branch["message"]


def test_continue_and_abort_name_a_branch_that_is_not_a_target(sandbox):
    for command in ("continue", "abort"):
        result = run_app(sandbox.project, command, "--api", "put_metric", "--branch", "v9")
        assert result.code == 2, (command, result.err)
        assert "branch 'v9' is not a target of patch set put_metric" in result.err
        assert "never run" not in result.err


def test_after_one_push_fails_the_other_bodies_say_which_prs_exist(sandbox):
    hook = sandbox.fork / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do\n  case $ref in *v2.11.0) "
                    "echo 'error: quota exceeded' >&2; exit 1;; esac\ndone\nexit 0\n",
                    encoding="utf-8")
    hook.chmod(0o755)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert result.code == 1
    with sqlite3.connect(sandbox.project / ".backport" / "forge.sqlite") as db:
        bodies = dict(db.execute("SELECT base, body FROM prs").fetchall())
    assert sorted(bodies) == ["master", "v2.12.0", "v2.7.1"]
    for target, body in bodies.items():
        assert "四个目标分支的 PR 均关联该 Issue" not in body, target
        assert ("已关联该 Issue 的 PR：v2.7.1、v2.12.0、master；尚无 PR 的目标分支：v2.11.0。"
                in body), target
        assert "| v2.11.0 | 未推送 |" in body and "| v2.11.0 | test-put-metric-v2.11.0 |" not in body
        assert "| v2.11.0 | 未运行：按 `--skip-tests` 跳过测试 |" in body

    # The push works again: the next run opens v2.11.0's PR and every body says four.
    hook.unlink()
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests").code == 0
    with sqlite3.connect(sandbox.project / ".backport" / "forge.sqlite") as db:
        bodies = dict(db.execute("SELECT base, body FROM prs").fetchall())
    assert len(bodies) == 4
    assert all("四个目标分支的 PR 均关联该 Issue" in body for body in bodies.values())
    assert all("| v2.11.0 | test-put-metric-v2.11.0 |" in body for body in bodies.values())
