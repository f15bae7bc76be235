"""Run report: rows, console table, Markdown and the status JSON document."""

from __future__ import annotations

import dataclasses
import io
import json

from rich.console import Console

from backport.config.model import SourcePr
from backport.records import (
    SKIP_DRY_NO_ENVS,
    SKIP_NO_TESTS,
    SKIP_NO_TORCH,
    SKIP_ON_REQUEST,
    BranchRecord,
)
from backport.records import (
    TestResult as Result,
)
from backport.report.summary import (
    render_markdown,
    render_summary,
    render_table,
    report_rows,
    status_json,
)
from backport.states import Status
from tests.helpers import report_fixtures as fx
from tests.helpers.report_fixtures import check_golden


def mixed_records() -> list[BranchRecord]:
    recs = fx.records()
    recs[0] = fx.failing(recs[0])
    recs[1].update(status="env-mismatch", test=None, pr=None,
                   message="torch: expected 2.11.0, found 2.13.0+cpu")
    recs[2]["test"]["skipped"] = True
    recs[2].update(status="planned", pr=None)
    return fx.typed(recs)


def test_report_rows() -> None:
    rows = report_rows(mixed_records())
    assert [r["target"] for r in rows] == list(fx.TARGETS)
    assert rows[0]["test"] == "Ran 7 tests in 0.1s, FAILED (failures=1), exit 1"
    assert rows[1]["test"] == "not run (env-mismatch)"
    assert rows[2]["test"] == "not run (--skip-tests)"
    assert rows[3]["test"] == "Ran 7 tests in 0.086s, OK, exit 0"
    assert rows[3]["pr"] == "https://gitcode.com/Ascend/pytorch/pull/42809"
    assert rows[1]["pr"] == ""


def test_render_table_shows_every_branch() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False, no_color=True)
    render_table(mixed_records(), console)
    text = out.getvalue()
    for target in fx.TARGETS:
        assert target in text and f"test-put-metric-{target}" in text
    assert "test-failed" in text and "env-mismatch" in text
    assert "https://gitcode.com/Ascend/pytorch/pull/42809" in text
    assert "v2.11.0: torch: expected 2.11.0, found 2.13.0+cpu" in text


def test_render_markdown_golden() -> None:
    text = render_markdown("put_metric", mixed_records())
    check_golden("report-put_metric.md", text)
    assert "| master | test-put-metric-master | done |" in text
    assert "[#42809](https://gitcode.com/Ascend/pytorch/pull/42809)" in text


def test_status_json_shape() -> None:
    doc = status_json(fx.patch_set(), mixed_records())
    json.dumps(doc)  # serializable
    assert doc["api"] == "torch.distributed.elastic.metrics.put_metric"
    assert doc["patch_set"] == "put_metric"
    first, second, *_ = doc["branches"]
    required = {"target", "fork_branch", "status", "commit", "test", "env", "pr", "message"}
    assert all(required <= set(b) for b in doc["branches"])
    assert {"ran", "ok", "exit_code", "summary"} <= set(first["test"])
    assert first["test"]["exit_code"] == 1 and first["test"]["ok"] is False
    assert first["pr"] is None and second["test"] is None
    pr = doc["branches"][3]["pr"]
    assert (pr["number"], pr["url"]) == (42809, "https://gitcode.com/Ascend/pytorch/pull/42809")
    assert doc["branches"][3]["env"]["shared_with"] == ["v2.12.0"]


def test_status_json_says_what_happened_to_each_branchs_tests() -> None:
    done, env_mismatch, planned_skipped, _ = mixed_records()
    commit = "7eee9eb92" + "0" * 31
    skipped = {cause: BranchRecord("v2.7.1", "test-put-metric-v2.7.1", status=Status.TESTED,
                                   commit=commit, test=Result.skipped_for(cause))
               for cause in (SKIP_ON_REQUEST, SKIP_NO_TESTS, SKIP_NO_TORCH, SKIP_DRY_NO_ENVS)}
    doc = status_json(fx.patch_set(), [done, env_mismatch, planned_skipped, *skipped.values()])
    said = [(b["status"], b["test_state"], b["skipped_because"]) for b in doc["branches"]]
    assert said == [("test-failed", "failed", None), ("env-mismatch", "not-run", None),
                    ("planned", "skipped", "--skip-tests"),
                    ("skipped", "skipped", "--skip-tests"), ("skipped", "skipped", "no-tests"),
                    ("skipped", "skipped", "no-environment"), ("skipped", "skipped", "dry-run")]
    passed = fx.typed(fx.records())[3]
    (branch,) = status_json(fx.patch_set(), [passed])["branches"]
    assert (branch["status"], branch["test_state"], branch["skipped_because"]) == (
        "done", "passed", None)
    # the table says it the same way
    assert [r["status"] for r in report_rows(list(skipped.values()))] == \
        ["skipped"] * 4


def test_a_skipped_branch_is_not_said_to_have_passed_on_the_source_pr() -> None:
    ps = dataclasses.replace(fx.patch_set(), source=SourcePr(
        number=42893, base="master", commit="9" * 40, merged=True, found_by="squash message"))
    record = BranchRecord("v2.7.1", "test-put-metric-v2.7.1", status=Status.TESTED,
                          commit="7eee9eb92" + "0" * 31, test=Result.skipped_for())
    text = render_summary(ps, fx.branch_map(), [record])
    (row,) = [line for line in text.splitlines() if line.startswith("| `v2.7.1`")]
    assert "测试已通过" not in row and "未运行测试（已跳过），尚未推送" in row
