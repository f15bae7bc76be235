"""`backport continue` / `abort` on a branch that has no conflict: one sentence, nothing changed."""

from __future__ import annotations

from tests.helpers.project import run_app


def test_continue_without_a_conflict_is_a_usage_error_naming_the_branch(sandbox) -> None:
    result = run_app(sandbox.project, "continue", "--api", "put_metric", "--branch", "master")
    assert result.code == 2
    assert result.err.strip() == ("error: branch 'master' of patch set 'put_metric' has no "
                                  "conflict to continue (status: never run)")


def test_abort_with_nothing_stopped_says_so(sandbox) -> None:
    result = run_app(sandbox.project, "abort", "--api", "put_metric")
    assert result.code == 0, result.err
    assert result.out.strip() == "aborted: nothing to abort"
