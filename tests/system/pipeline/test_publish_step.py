"""The CI's publish step (`apply --skip-tests` after `apply --no-push` tested the branch): it runs
no test, keeps the tested result, and pushes only a commit whose tree is the series applied
afresh on its base (the sandbox's real repositories, the local forge, real torch)."""

from __future__ import annotations

import json
from pathlib import Path

from backport.demo.sandbox import Sandbox
from tests.helpers.project import git, needs_torch
from tests.helpers.runs import apply, prs

TARGET = "v2.7.1"


def _journal(sandbox: Sandbox):
    return sandbox.project / ".backport" / "runs" / "put_metric" / "journal.json"


@needs_torch
def test_the_publish_step_keeps_the_tested_result_and_pushes_the_fresh_series(sandbox: Sandbox):
    tested, events = apply(sandbox, no_push=True, branches=(TARGET,))
    assert tested.records[0].status.value == "tested", tested.records[0].message
    published, events = apply(sandbox, skip_tests=True, branches=(TARGET,))
    (rec,) = published.records
    assert rec.status.value == "done", rec.message
    assert rec.test is not None and rec.test.ok  # the result of the test step, kept
    assert any("applied afresh" in d for d in events.said(TARGET, "push"))
    assert len(prs(sandbox)) == 1


@needs_torch
def test_a_commit_changed_after_the_test_is_never_published(sandbox: Sandbox):
    """Test code rewrote the branch's commit after its run (and the journal with it): the publish
    step's fresh apply of the series makes another tree, so nothing is pushed."""
    tested, _ = apply(sandbox, no_push=True, branches=(TARGET,))
    (rec,) = tested.records
    assert rec.status.value == "tested", rec.message
    worktree = rec.worktree
    assert worktree is not None
    planted = Path(worktree) / "test" / "planted.py"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text("print('not in the series')\n", encoding="utf-8")
    git(Path(worktree), "add", "--sparse", "-f", str(planted))
    git(Path(worktree), "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit",
        "-q", "--amend", "--no-edit")
    changed = git(Path(worktree), "rev-parse", "HEAD")
    data = json.loads(_journal(sandbox).read_text(encoding="utf-8"))
    branch = data["branches"][TARGET]
    branch["commit"] = changed
    branch["test"]["commit"] = changed
    _journal(sandbox).write_text(json.dumps(data), encoding="utf-8")

    published, _ = apply(sandbox, skip_tests=True, branches=(TARGET,))
    (rec,) = published.records
    assert rec.status.value == "failed" and "applied afresh" in rec.message
    assert not (sandbox.project / ".backport" / "forge.sqlite").exists()  # no PR either
    assert git(sandbox.fork, "branch", "--list") == ""
