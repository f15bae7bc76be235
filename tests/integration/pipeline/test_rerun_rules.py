"""The re-run rules, in-process on real repositories and the local forge.

Which branches a run works on (`needs_work`), when the apply, test, push and pr steps redo their
work or keep the previous run's, and which branches get published.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from backport.codec import encode
from backport.demo.sandbox import Sandbox
from backport.pipeline.journal import Journal
from backport.pipeline.run import publishable, run_apply
from backport.pipeline.session import ApplyOptions, RunMode, Session
from backport.records import TestResult as Result
from backport.states import Status
from tests.helpers.project import edit_config, git, rev
from tests.helpers.runs import NAME, TARGETS, Events, apply, project_of, prs, statuses


def journal(sandbox: Sandbox) -> Journal:
    return Journal.load(sandbox.project / ".backport", NAME, "api")


def fork_heads(sandbox: Sandbox) -> dict[str, str | None]:
    return {t: rev(sandbox.fork, f"refs/heads/test-put-metric-{t}") for t in TARGETS}


def move_upstream(sandbox: Sandbox, tmp_path: Path, branch: str) -> str:
    """Commit an unrelated file on upstream ``branch``; returns the new head."""
    work = tmp_path / f"move-{branch}"
    git(tmp_path, "clone", "--quiet", "--branch", branch, str(sandbox.upstream), str(work))
    (work / "UNRELATED.md").write_text("moved\n", encoding="utf-8")
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "unrelated change")
    git(work, "push", "--quiet", "origin", branch)
    return git(work, "rev-parse", "HEAD")


# -- needs_work -------------------------------------------------------------------------------
def test_finished_branches_are_left_alone_and_force_redoes_them(sandbox: Sandbox) -> None:
    first, _ = apply(sandbox, skip_tests=True)
    assert statuses(first) == dict.fromkeys(TARGETS, "done")
    heads, bodies = fork_heads(sandbox), prs(sandbox)

    again, events = apply(sandbox, skip_tests=True)
    for target in TARGETS:
        assert events.steps(target) == ["done"]
        assert events.said(target, "done") == ["finished earlier; --force redoes it"]
    assert fork_heads(sandbox) == heads and prs(sandbox) == bodies
    assert [encode(r) for r in again.records] == [encode(r) for r in first.records]

    forced, events = apply(sandbox, skip_tests=True, force=True)
    assert statuses(forced) == dict.fromkeys(TARGETS, "done")
    for target in TARGETS:
        assert "applied" in events.steps(target) and "pushed" in events.steps(target)
    assert len(prs(sandbox)) == 4  # the same four PRs, found again, not new ones


def test_a_branch_waiting_in_a_conflict_is_left_for_the_user(sandbox: Sandbox) -> None:
    apply(sandbox, skip_tests=True, no_push=True, branches=("v2.7.1",))
    rec = journal(sandbox).get("v2.7.1")
    assert rec is not None and rec.worktree
    worktree = Path(rec.worktree)
    # Put the worktree in the middle of a `git am` as a conflict leaves it.
    (Path(git(worktree, "rev-parse", "--git-dir")) / "rebase-apply").mkdir()
    (Path(git(worktree, "rev-parse", "--git-dir")) / "rebase-apply" / "applying").touch()
    journal_ = journal(sandbox)
    journal_.change("v2.7.1", lambda r: r.conflicted(r.base or "", "a conflict", [], str(worktree), [],
                                                       {}))

    outcome, events = apply(sandbox, skip_tests=True, no_push=True, branches=("v2.7.1",))
    assert events.steps("v2.7.1") == ["conflict"]
    assert "still waiting for you in" in events.said("v2.7.1", "conflict")[0]
    assert statuses(outcome) == {"v2.7.1": "conflict"}


def test_failed_and_stopped_branches_are_worked_on_again(sandbox: Sandbox) -> None:
    apply(sandbox, skip_tests=True, no_push=True)
    j = journal(sandbox)
    j.change("v2.11.0", lambda r: r.failed(Status.FAILED, "network down", None))
    j.change("v2.12.0", lambda r: r.planned("dry run: nothing pushed"))
    outcome, events = apply(sandbox, skip_tests=True)
    assert statuses(outcome) == dict.fromkeys(TARGETS, "done")
    assert all("pushed" in events.steps(t) for t in TARGETS)


# -- apply ------------------------------------------------------------------------------------
def test_apply_keeps_the_commit_when_nothing_moved_and_redoes_it_on_a_moved_base(
        sandbox: Sandbox, tmp_path: Path) -> None:
    first, _ = apply(sandbox, skip_tests=True, no_push=True)
    before = {r.target: r for r in first.records}
    commits = {r.target: r.commit for r in first.records}
    again, events = apply(sandbox, skip_tests=True, no_push=True)
    assert {r.target: r.commit for r in again.records} == commits
    for target in TARGETS:
        assert events.said(target, "apply") == [
            f"kept {commits[target][:9]} from the previous run"]

    moved = move_upstream(sandbox, tmp_path, "v2.11.0")
    again, events = apply(sandbox, skip_tests=True, no_push=True)
    after = {r.target: r for r in again.records}
    assert after["v2.11.0"].base == moved and after["v2.11.0"].commit != before["v2.11.0"].commit
    assert git(sandbox.upstream, "rev-parse", "v2.11.0") == moved
    assert "applied" in events.steps("v2.11.0")
    for target in ("v2.7.1", "v2.12.0", "master"):
        assert after[target].commit == before[target].commit
        assert "applied" not in events.steps(target)


def test_a_hand_made_commit_survives_a_moved_base(sandbox: Sandbox, tmp_path: Path) -> None:
    first, _ = apply(sandbox, skip_tests=True, no_push=True, branches=("master",))
    (rec,) = first.records
    journal(sandbox).change("master", lambda r: r.resolved_by_hand(rec.commit or "", ""))
    move_upstream(sandbox, tmp_path, "master")
    again, events = apply(sandbox, skip_tests=True, no_push=True, branches=("master",))
    (after,) = again.records
    assert after.commit == rec.commit and after.manual
    assert events.said("master", "apply") == [f"kept {rec.commit[:9]} from the previous run"]


def test_force_redoes_the_apply_and_a_gone_worktree_is_applied_again(sandbox: Sandbox) -> None:
    apply(sandbox, skip_tests=True, no_push=True, branches=("v2.7.1",))
    forced, events = apply(sandbox, skip_tests=True, no_push=True, force=True,
                           branches=("v2.7.1",))
    assert "applied" in events.steps("v2.7.1")
    assert not any(d.startswith("kept") for d in events.said("v2.7.1", "apply"))

    (rec,) = forced.records
    assert rec.worktree
    git(Path(rec.worktree), "worktree", "remove", "--force", rec.worktree)
    again, events = apply(sandbox, skip_tests=True, no_push=True, branches=("v2.7.1",))
    assert "applied" in events.steps("v2.7.1")
    assert Path(again.records[0].worktree or "").exists()


# -- test -------------------------------------------------------------------------------------
def test_a_passing_result_of_the_same_commit_is_kept(sandbox: Sandbox) -> None:
    first, _ = apply(sandbox, skip_tests=True, no_push=True, branches=("v2.7.1",))
    (rec,) = first.records
    passed = Result(ok=True, exit_code=0, ran=7, summary="Ran 7 tests in 0.1s, OK",
                        summary_lines=("Ran 7 tests in 0.1s", "OK"), commit=rec.commit)
    journal(sandbox).change("v2.7.1", lambda r: r.tested(passed, r.env, ""))
    again, events = apply(sandbox, no_push=True, branches=("v2.7.1",))
    assert events.said("v2.7.1", "tested") == ["kept the passing result of the previous run"]
    assert "probe" not in events.steps("v2.7.1")
    assert again.records[0].test == passed


def test_a_result_is_not_kept_when_it_failed_is_of_another_commit_or_forced(
        sandbox: Sandbox) -> None:
    """Each of the three on one branch in turn, on the commit of one apply: a failed result,
    a passing one of another commit, a passing one with ``--force``: each time the tests run
    again."""
    # The rule is the subject, not torch: the tests run again on an interpreter without it
    # (and fail at once; tests/system runs them on torch).
    def torchless(data: dict) -> None:
        for env in data["environments"].values():
            env["python"] = sys.executable
    edit_config(sandbox, torchless)
    first, _ = apply(sandbox, skip_tests=True, no_push=True, branches=("v2.7.1",))
    (rec,) = first.records
    for change in ("failed", "other-commit", "force"):
        result = Result(ok=change != "failed", exit_code=0 if change != "failed" else 1,
                        commit="0" * 40 if change == "other-commit" else rec.commit)
        journal(sandbox).change("v2.7.1", lambda r, result=result: r.tested(result, r.env, ""))
        _, events = apply(sandbox, no_push=True, branches=("v2.7.1",), force=change == "force")
        assert "probe" in events.steps("v2.7.1"), change
        assert "kept the passing result of the previous run" not in events.said(
            "v2.7.1", "tested"), change


def test_skip_tests_records_a_skipped_result(sandbox: Sandbox) -> None:
    outcome, events = apply(sandbox, skip_tests=True, no_push=True, branches=("v2.12.0",))
    (rec,) = outcome.records
    assert rec.status == Status.TESTED and rec.test == Result.skipped_for()
    assert events.said("v2.12.0", "tested") == ["skipped (--skip-tests)"]


# -- push -------------------------------------------------------------------------------------
def test_push_skips_a_fork_branch_already_at_the_commit_and_leaves_one_someone_else_moved(
        sandbox: Sandbox, tmp_path: Path) -> None:
    first, _ = apply(sandbox, skip_tests=True, no_pr=True, branches=("v2.7.1",))
    (rec,) = first.records
    assert rec.status == Status.PUSHED and rec.pushed_sha == rec.commit
    _, events = apply(sandbox, skip_tests=True, no_pr=True, branches=("v2.7.1",))
    assert events.said("v2.7.1", "pushed") == [
        f"test-put-metric-v2.7.1 already at {rec.commit[:9]}"]
    assert "pushing" not in events.steps("v2.7.1")

    work = tmp_path / "someone"
    git(tmp_path, "clone", "--quiet", "--branch", "test-put-metric-v2.7.1", str(sandbox.fork),
        str(work))
    (work / "FIX.md").write_text("a reviewer's fix\n", encoding="utf-8")
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "reviewer fix")
    git(work, "push", "--quiet", "origin", "test-put-metric-v2.7.1")
    theirs = git(work, "rev-parse", "HEAD")

    outcome, _ = apply(sandbox, skip_tests=True, no_pr=True, branches=("v2.7.1",), force=True)
    (after,) = outcome.records
    assert after.status == Status.FORK_DIVERGED and after.fork_sha == theirs
    assert rev(sandbox.fork, "refs/heads/test-put-metric-v2.7.1") == theirs

    outcome, _ = apply(sandbox, skip_tests=True, no_pr=True, branches=("v2.7.1",), force=True,
                       overwrite_fork_branch=True)
    (after,) = outcome.records
    assert after.status == Status.PUSHED and after.fork_sha is None
    assert rev(sandbox.fork, "refs/heads/test-put-metric-v2.7.1") == after.commit
    assert after.commit != theirs and rec.commit


def test_dry_run_plans_the_push_and_writes_nothing(sandbox: Sandbox) -> None:
    planned: list[str] = []
    events = Events()
    project = project_of(sandbox)
    options = ApplyOptions(skip_tests=True, mode=RunMode(dry_run=True))
    (outcome,) = run_apply(project, [NAME], options, events,
                           session=Session(project, options, plan=planned.append))
    assert statuses(outcome) == dict.fromkeys(TARGETS, "planned")
    assert sum(line.startswith("git push --force-with-lease=") for line in planned) == 4
    assert fork_heads(sandbox) == dict.fromkeys(TARGETS)
    assert not (sandbox.project / ".backport" / "runs" / NAME / "journal.json").exists()


# -- pr ---------------------------------------------------------------------------------------
def test_pr_is_found_again_and_its_body_refreshed_not_duplicated(sandbox: Sandbox) -> None:
    apply(sandbox, skip_tests=True, branches=("v2.7.1",))
    ((number, _, body, _),) = prs(sandbox)
    assert "| v2.11.0 | 未推送 |" in body
    outcome, _ = apply(sandbox, skip_tests=True)
    rows = prs(sandbox)
    assert len(rows) == 4 and rows[0][0] == number
    assert "| v2.11.0 | test-put-metric-v2.11.0 |" in rows[0][2]  # refreshed by the later run
    pr = {r.target: r.pr for r in outcome.records}
    assert all(p is not None and p.linked and p.decorated for p in pr.values())


def test_which_branches_get_published(sandbox: Sandbox) -> None:
    first, _ = apply(sandbox, skip_tests=True, no_push=True, branches=("v2.7.1",))
    (rec,) = first.records
    failed = dataclasses.replace(rec, status=Status.TEST_FAILED, test=Result(ok=False, exit_code=1))
    assert not publishable(failed, ApplyOptions())
    assert publishable(failed, ApplyOptions(pr_on_failure=True))
    assert not publishable(dataclasses.replace(failed, commit=None), ApplyOptions(pr_on_failure=True))
    for status in (Status.TESTED, Status.PUSHED):
        assert publishable(dataclasses.replace(rec, status=status), ApplyOptions())
        local = RunMode.of_flags(no_push=True)
        assert not publishable(dataclasses.replace(rec, status=status), ApplyOptions(mode=local))
        dry_local = ApplyOptions(mode=RunMode.of_flags(no_push=True, dry_run=True))
        assert not publishable(dataclasses.replace(rec, status=status), dry_local)  # plans no push
        dry = ApplyOptions(mode=RunMode.of_flags(dry_run=True))
        assert publishable(dataclasses.replace(rec, status=status), dry)
    for status in (Status.CONFLICT, Status.ENV_MISSING, Status.ENV_MISMATCH, Status.APPLIED,
                   Status.FAILED, Status.FORK_DIVERGED):
        assert not publishable(dataclasses.replace(rec, status=status), ApplyOptions(pr_on_failure=True))
