"""`apply` end to end on real repositories with the embedded local forge."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from backport.demo.sandbox import Sandbox
from backport.states import Status
from tests.helpers.project import git, rev, run_app, run_cli
from tests.helpers.runs import apply

TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
TEST_FILE = "test/distributed/elastic/metrics/test_metrics_api.py"


def forge_rows(project: Path) -> list[tuple]:
    with sqlite3.connect(project / ".backport" / "forge.sqlite") as db:
        return db.execute("SELECT number, head, base, title, body FROM prs ORDER BY number").fetchall()


def test_apply_creates_one_commit_branches_and_four_prs_and_is_idempotent(sandbox):
    first = run_cli(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--json")
    assert first.code == 0, first.err
    state = first.json()
    assert [b["target"] for b in state["branches"]] == TARGETS
    assert {b["status"] for b in state["branches"]} == {"done"}
    for target in TARGETS:
        branch = f"test-put-metric-{target}"
        head = rev(sandbox.fork, f"refs/heads/{branch}")
        assert head, branch
        assert git(sandbox.fork, "rev-parse", f"{head}^") == rev(sandbox.upstream, target)
        subject = git(sandbox.fork, "log", "-1", "--format=%an|%s", head)
        assert subject == "lgxxx|test: add put_metric coverage"
    prs = forge_rows(sandbox.project)
    assert sorted((head, base) for _, head, base, _, _ in prs) == sorted(
        (f"test-put-metric-{t}", t) for t in TARGETS)
    assert all(title == "test: add put_metric coverage" for _, _, _, title, _ in prs)
    assert all("https://gitcode.com/Ascend/pytorch/issues/3216" in body for *_, body in prs)

    status = run_cli(sandbox.project, "status", "--json").json()
    assert [b["pr"]["number"] for b in status["branches"]] == [1, 2, 3, 4]

    heads_before = {t: rev(sandbox.fork, f"refs/heads/test-put-metric-{t}") for t in TARGETS}
    second = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--json")
    assert second.code == 0, second.err
    assert second.json() == state
    assert forge_rows(sandbox.project) == prs
    assert {t: rev(sandbox.fork, f"refs/heads/test-put-metric-{t}") for t in TARGETS} == heads_before


def test_unknown_api_and_branch_are_usage_errors(sandbox):
    result = run_app(sandbox.project, "apply", "--api", "nope")
    assert result.code == 2
    assert "no patch set 'nope'" in result.err
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--branch", "v9.9")
    assert result.code == 2
    assert "branch 'v9.9'" in result.err
    assert "Traceback" not in result.err


def test_dry_run_writes_nothing_remote(sandbox):
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--dry-run")
    assert result.code == 0, result.err
    assert "would" in result.out.lower() or "not made" in result.out
    assert git(sandbox.fork, "for-each-ref") == ""
    assert not (sandbox.project / ".backport" / "forge.sqlite").exists() or not forge_rows(
        sandbox.project)
    assert not (sandbox.project / ".backport" / "runs" / "put_metric" / "journal.json").exists()


def test_no_push_stops_before_the_fork(sandbox):
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--no-push",
                     "--json")
    assert result.code == 0, result.err
    said = {(b["status"], b["test_state"], b["skipped_because"]) for b in result.json()["branches"]}
    assert said == {("skipped", "skipped", "--skip-tests")}  # past the test step, none run
    assert git(sandbox.fork, "for-each-ref") == ""


def test_branch_limits_targets(sandbox):
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                     "--branch", "v2.7.1", "--branch", "master", "--json")
    assert result.code == 0, result.err
    assert [b["target"] for b in result.json()["branches"]] == ["v2.7.1", "master"]
    assert len(forge_rows(sandbox.project)) == 2


def test_pr_body_reports_the_docs_audit_of_upstream_master(sandbox, tmp_path):
    work = tmp_path / "docs-edit"
    git(tmp_path, "clone", "--quiet", "--branch", "master", str(sandbox.upstream), str(work))
    page = work / "docs/zh/api/native_api/pytorch_2-12-0/torch-distributed-elastic.md"
    page.parent.mkdir(parents=True)
    page.write_text(
        "# torch.distributed.elastic\n\n### torch.distributed.elastic.metrics.put_metric\n\n"
        "| 硬件 | 是否支持 |\n| --- | --- |\n| Atlas A2 训练系列产品 | &#10004; |\n"
        "| Ascend 950DT | &#10007; |\n", encoding="utf-8")
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "docs: list put_metric")
    git(work, "push", "--quiet", "origin", "master")

    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert result.code == 0, result.err
    body = next(body for _, _, base, _, body in forge_rows(sandbox.project) if base == "v2.7.1")
    assert "<!-- backport:docs:start -->" in body
    assert "| 2.12.0 | 是 |" in body
    assert "pytorch_2-12-0/torch-distributed-elastic.md" in body


def test_a_target_the_upstream_lacks_fails_alone_and_the_others_are_fetched(
        sandbox: Sandbox) -> None:
    git(sandbox.upstream, "update-ref", "-d", "refs/heads/v2.11.0")
    outcome, _ = apply(sandbox, skip_tests=True, no_pr=True)
    records = {r.target: r for r in outcome.records}
    missing = records.pop("v2.11.0")
    assert missing.status == Status.FAILED and missing.error_code == "branch-missing"
    assert f"target branch 'v2.11.0' does not exist in {sandbox.upstream}" in missing.message
    assert {t: r.status for t, r in records.items()} == dict.fromkeys(records, Status.PUSHED)
