"""After a run with a conflict and failing tests, every report says only true, portable things."""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import tempfile
from pathlib import Path

import pytest

from backport.demo.sandbox import build_sandbox
from tests.helpers.project import PATCHES, git, run_app, run_cli
from tests.helpers.upstream import TEST_FILE, change_upstream_branch

TARGETS = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
NO_TORCH = "ModuleNotFoundError: No module named 'torch'"


def pr_bodies(project: Path) -> dict[str, str]:
    with sqlite3.connect(project / ".backport" / "forge.sqlite") as db:
        return dict(db.execute("SELECT base, body FROM prs").fetchall())


def local_paths(text: str, *roots: Path) -> list[str]:
    """Every place ``text`` shows this machine: the given roots, home, temp dir, interpreter.

    Nothing is exempt, the recorded COMMAND lines included.
    """
    needles = {str(r) for r in roots} | {os.path.expanduser("~"), tempfile.gettempdir(),
                                        str(Path(sys.executable).parent)}
    return [n for n in needles if n and n != "/" and n in text]


@pytest.fixture
def torchless(tmp_path: Path):
    """The demo sandbox whose environments have no torch: every test dies on `import torch`."""
    return build_sandbox(tmp_path / "sb", PATCHES, sys.executable)


def test_conflict_and_failing_tests_leave_true_portable_reports(torchless, tmp_path):
    sandbox = torchless
    change_upstream_branch(sandbox.upstream, "v2.11.0", tmp_path)
    # In-process (apply's and status' processes are run end to end by test_apply_local.py).
    run = run_app(sandbox.project, "apply", "--api", "put_metric", "--pr-on-failure", "--isolated")
    assert run.code == 1, run.err
    status = run_app(sandbox.project, "status", "--json")
    assert status.code == 1
    by_target = {b["target"]: b for b in status.json()["branches"]}
    assert by_target["v2.11.0"]["status"] == "conflict"
    # Bodies written before the later PRs existed are refreshed, each under its own branch.
    refreshed = re.findall(r"\[([^\]\s]+)\] pr: body of the (\S+) PR refreshed",
                           " ".join(run.err.split()))
    assert refreshed and all(label == target for label, target in refreshed), run.err
    for target in ("v2.7.1", "v2.12.0", "master"):
        assert by_target[target]["status"] == "test-failed"
        assert by_target[target]["test"]["summary"] == NO_TORCH  # item 1, not "not found"

    # The run table and `status` are for the maintainer: the failure, the kept worktree.
    table = run_app(sandbox.project, "status")
    assert table.code == 1  # like apply: a branch failed
    assert f"{NO_TORCH}, exit 1" in " ".join(table.out.split())
    assert "not found" not in table.out
    assert "backport continue" in " ".join(table.out.split())
    status = run_app(sandbox.project, "status", "--json").json()
    assert [b["test"]["summary"] for b in status["branches"] if b["test"]] == [NO_TORCH] * 3
    one = run_app(sandbox.project, "status", "--branch", "v2.7.1", "--json")
    assert (one.code, [b["target"] for b in one.json()["branches"]]) == (1, ["v2.7.1"])
    assert run_app(sandbox.project, "status", "--branch", "v9").code == 2

    # Every PR body, as created and refreshed, and as `preview` renders it for every branch.
    bodies = pr_bodies(sandbox.project)
    assert sorted(bodies) == ["master", "v2.12.0", "v2.7.1"]
    preview = run_cli(sandbox.project, "preview", "--api", "put_metric")
    assert preview.code == 0, preview.err
    previews = preview.out.split("<!-- backport:preview ")[1:]
    assert len(previews) == 4
    for name, body in [*bodies.items(), *(("preview", p) for p in previews)]:
        assert local_paths(body, sandbox.root, tmp_path) == [], name
        assert "backport continue" not in body and "resolve it in" not in body, name
        assert "v2.11.0：未探测运行环境（该分支未运行测试：补丁未能自动应用）" in body, name
        assert f"| v2.11.0 | 冲突：{TEST_FILE}（补丁未能自动应用，未运行测试） |" in body, name
        assert f"| v2.7.1 | {NO_TORCH}，退出码 1 |" in body, name
        # Item 4: only the three PRs that exist are said to be linked; no unpushed fork branch.
        assert "四个目标分支的 PR 均关联该 Issue" not in body, name
        assert ("已关联该 Issue 的 PR：v2.7.1、v2.12.0、master；尚无 PR 的目标分支：v2.11.0。"
                in body), name
        assert "| v2.11.0 | 未推送 |" in body, name
        assert "| v2.11.0 | test-put-metric-v2.11.0 |" not in body, name
    evidence = bodies["v2.7.1"].split("<!-- api-validation-evidence:start -->")[1]
    assert f"RESULT:\n{NO_TORCH}\ntest_exit_code=1" in evidence
    assert "RESULT:\nnot found" not in evidence


def test_after_fork_diverged_the_evidence_names_the_prs_real_head(torchless, tmp_path):
    sandbox = torchless
    branch = "test-put-metric-v2.7.1"
    args = ("apply", "--api", "put_metric", "--branch", "v2.7.1", "--pr-on-failure", "--isolated")
    assert run_app(sandbox.project, *args).code == 1  # no torch: a draft PR shows the failure
    first = git(sandbox.fork, "rev-parse", branch)
    assert f"HEAD_COMMIT={first}" in pr_bodies(sandbox.project)["v2.7.1"]

    # Someone pushes a fix to the fork branch; upstream v2.7.1 moves on, so the re-run makes a
    # new commit, tests it and finds the fork branch moved.
    work = tmp_path / "someone"
    git(tmp_path, "clone", "--quiet", "--branch", branch, str(sandbox.fork), str(work))
    (work / "NOTE.md").write_text("a fix\n", encoding="utf-8")
    git(work, "add", ".")
    git(work, "commit", "--quiet", "-m", "someone's fix")
    git(work, "push", "--quiet", "origin", branch)
    theirs = git(sandbox.fork, "rev-parse", branch)
    up = tmp_path / "upstream-edit"
    git(tmp_path, "clone", "--quiet", "--branch", "v2.7.1", str(sandbox.upstream), str(up))
    (up / "README.md").write_text("moved on\n", encoding="utf-8")
    git(up, "commit", "--quiet", "-am", "upstream moves on")
    git(up, "push", "--quiet", "origin", "v2.7.1")

    again = run_app(sandbox.project, *args, "--json")
    (rec,) = again.json()["branches"]
    assert rec["status"] == "fork-diverged"
    ours = rec["commit"]
    assert ours not in (first, theirs)
    assert git(sandbox.fork, "rev-parse", branch) == theirs  # left alone
    # The evidence text a reviewer reads (the record line under it also keeps what was pushed).
    evidence = pr_bodies(sandbox.project)["v2.7.1"].split("api-validation-evidence:start")[1]
    evidence = evidence.split("<!-- backport:record")[0]
    assert f"HEAD_COMMIT={theirs}" in evidence
    assert f"TESTED_COMMIT={ours}" in evidence
    assert "STALE=" in evidence
    assert first not in evidence
