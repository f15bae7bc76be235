"""An already-proposed branch as a sibling PR's body, the run table and the run report show it:
the other PR named and linked, never as a branch without a PR."""

from __future__ import annotations

from rich.console import Console

from backport.report.body import render_body
from backport.report.summary import render_markdown, render_table
from tests.helpers import report_fixtures as fx

SYNC_URL = "https://gitcode.com/Ascend/pytorch/merge_requests/43001"


def _records() -> list[dict]:
    recs = fx.records()
    recs[1].update(status="already-proposed", test=None, env=None, pr=None, commit=None,
                   pushed_sha=None, message=f"already proposed in PR !43001 (open, the sync bot's PR): {SYNC_URL}; it "
                           "carries !42810 into v2.11.0, so no PR is opened",
                   proposed={"number": 43001, "url": SYNC_URL, "state": "open", "kind": "sync",
                             "title": "[sync] PR-42810: test: add put_metric coverage"})
    return recs


def test_a_sibling_body_names_the_pr_that_carries_the_source() -> None:
    body = render_body(fx.context("v2.7.1", recs=_records()))
    assert (f"| v2.11.0 | 未运行：该分支已有 [!43001]({SYNC_URL})（同步机器人的 PR，尚未合入）"
            "带入同一源 PR，未再创建 PR |") in body
    assert ("已关联该 Issue 的 PR：v2.7.1、v2.12.0、master；"
            "已由其他 PR 带入源 PR 的目标分支：v2.11.0（!43001）。") in body
    assert "尚无 PR 的目标分支" not in body


def test_the_run_table_and_report_name_it() -> None:
    records = fx.typed(_records())
    console = Console(width=300, record=True)
    render_table(records, console)
    shown = console.export_text()
    assert "already-proposed" in shown
    assert f"v2.11.0: already proposed in PR !43001 (open, the sync bot's PR): {SYNC_URL}" in shown
    assert shown.count("already proposed in PR !43001") == 1
    report = render_markdown("pr-42810", records)
    assert "| v2.11.0 | test-put-metric-v2.11.0 | already-proposed |" in report
    # The report's messages are inert: the PR reference is shown as code, not a live link.
    assert report.count("already proposed in PR `!43001`") == 1
