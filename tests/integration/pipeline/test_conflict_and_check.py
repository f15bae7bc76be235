"""A conflict stops one branch only; `continue` finishes it; `check` names what is wrong."""

from __future__ import annotations

from tests.helpers.project import git, pr_body, rev, run_app, run_cli
from tests.helpers.upstream import CHANGED, CONTEXT, TEST_FILE, change_upstream_branch


def resolve_by_hand(sandbox) -> None:
    """What a maintainer does: v2.7.1's patched file with v2.11.0's own change, staged."""
    worktree = sandbox.project / ".backport" / "worktrees" / "put_metric" / "v2.11.0"
    resolved = git(sandbox.fork, "show", f"test-put-metric-v2.7.1:{TEST_FILE}")
    (worktree / TEST_FILE).write_text(resolved.replace(CONTEXT, CHANGED), encoding="utf-8")
    git(worktree, "add", "--", TEST_FILE)


def test_conflict_stops_one_branch_and_continue_save_finishes_it_with_a_variant(sandbox,
                                                                               tmp_path):
    """`continue --save` finishes the branch and records a variant the next run reproduces."""
    change_upstream_branch(sandbox.upstream, "v2.11.0", tmp_path)
    # In-process: apply's process is run end to end by test_apply_local.py.
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--json")
    assert result.code == 1
    by_target = {b["target"]: b for b in result.json()["branches"]}
    assert by_target["v2.11.0"]["status"] == "conflict"
    assert TEST_FILE in by_target["v2.11.0"]["message"]
    assert {by_target[t]["status"] for t in ("v2.7.1", "v2.12.0", "master")} == {"done"}
    assert rev(sandbox.fork, "refs/heads/test-put-metric-v2.11.0") is None

    first_body = pr_body(sandbox.project, "v2.7.1")
    assert "# 未运行：补丁未能自动应用" in first_body

    # A plain re-run leaves the kept worktree alone and still reports the conflict.
    again = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--json")
    assert again.code == 1
    assert {b["target"]: b["status"] for b in again.json()["branches"]}["v2.11.0"] == "conflict"

    resolve_by_hand(sandbox)
    done = run_cli(sandbox.project, "continue", "--api", "put_metric", "--branch", "v2.11.0",
                   "--skip-tests", "--save", "--json")
    assert done.code == 0, done.err
    assert {b["target"]: b["status"] for b in done.json()["branches"]}["v2.11.0"] == "done"
    head = rev(sandbox.fork, "refs/heads/test-put-metric-v2.11.0")
    assert git(sandbox.fork, "rev-parse", f"{head}^") == rev(sandbox.upstream, "v2.11.0")
    assert "v2.11.0 reworded" in git(sandbox.fork, "show", f"{head}:{TEST_FILE}")
    # The PRs opened earlier now show v2.11.0's new state too.
    assert "# 未运行：补丁未能自动应用" not in pr_body(sandbox.project, "v2.7.1")
    final = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert final.code == 0, final.err

    variant = sandbox.project / "patches" / "put_metric" / "v2.11.0"
    assert sorted(p.name for p in variant.glob("*.patch")) == [
        "0001-test-add-put_metric-coverage.patch"]
    listing = run_cli(sandbox.project, "list", "--json").json()
    flags = {b["target"]: b["variant"] for b in listing[0]["branches"]}
    assert flags == {"v2.7.1": False, "v2.11.0": True, "v2.12.0": False, "master": False}
    assert run_app(sandbox.project, "check").code == 0
    pushed = rev(sandbox.fork, "refs/heads/test-put-metric-v2.11.0")
    redo = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--force",
                   "--json")
    assert redo.code == 0, redo.err
    assert {b["target"]: b["status"] for b in redo.json()["branches"]}["v2.11.0"] == "done"
    # The variant reproduces the hand-made commit exactly: the fork branch does not move.
    assert rev(sandbox.fork, "refs/heads/test-put-metric-v2.11.0") == pushed


def test_check_names_a_branch_where_the_patch_does_not_apply_and_abort_resets_it(sandbox,
                                                                                  tmp_path):
    change_upstream_branch(sandbox.upstream, "v2.11.0", tmp_path)
    result = run_app(sandbox.project, "check", "--json")
    assert result.code == 1
    failing = [f for f in result.json()["findings"] if not f["ok"]]
    assert [f["subject"] for f in failing] == ["put_metric on v2.11.0"]
    assert not (sandbox.project / ".backport" / "worktrees").exists()

    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--branch", "v2.11.0",
                   "--skip-tests").code == 1
    worktree = sandbox.project / ".backport" / "worktrees" / "put_metric" / "v2.11.0"
    assert worktree.exists()
    result = run_cli(sandbox.project, "abort", "--api", "put_metric", "--branch", "v2.11.0")
    assert result.code == 0, result.err
    assert not worktree.exists()
    status = run_app(sandbox.project, "status", "--json").json()
    assert {b["target"]: b["status"] for b in status["branches"]}["v2.11.0"] == "pending"


def test_check_passes_on_a_good_map_and_names_a_missing_branch(sandbox):
    good = run_cli(sandbox.project, "check", "--json")
    assert good.code == 0, good.out + good.err
    assert good.json()["ok"] is True
    assert git(sandbox.fork, "for-each-ref") == ""  # check wrote nothing to the fork

    git(sandbox.upstream, "branch", "-D", "v2.12.0")
    bad = run_app(sandbox.project, "check", "--json")
    assert bad.code == 1
    problems = bad.json()["problems"]
    assert any("'v2.12.0' does not exist" in p for p in problems)
    offline = run_app(sandbox.project, "check", "--offline")
    assert offline.code == 0
