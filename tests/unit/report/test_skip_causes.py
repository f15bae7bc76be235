"""Every "not run" says its true cause: --skip-tests only when the user passed it."""

from __future__ import annotations

from backport.records import SKIP_NO_TORCH, SKIP_ON_REQUEST
from backport.records import TestResult as Result
from backport.report import summary
from backport.report.body import render_body
from tests.helpers import report_fixtures as fx


def _skipped(cause: str, *, probed: bool) -> list[dict]:
    recs = fx.records()
    for rec in recs:
        if not probed:
            rec.pop("env")
        rec["test"] = Result.skipped_for(cause).to_json()
    return recs


def test_without_torch_nothing_says_skip_tests_and_no_line_contradicts_itself() -> None:
    recs = _skipped(SKIP_NO_TORCH, probed=False)
    body = render_body(fx.context("master", recs=recs))
    assert "skip-tests" not in body, body
    assert "未运行：运行本工具的主机上没有装有 torch 的 Python 解释器" in body
    assert "master：未探测运行环境（运行本工具的主机上没有装有 torch 的 Python 解释器）" in body
    assert "该分支未运行测试：已完成" not in body
    assert "RESULT: not run (skipped: no interpreter with torch on the host that ran it)" in body
    assert summary.test_result(fx.typed(recs)[0]) == ("not run (no interpreter with torch on the host "
                                              "that ran it)")


def test_on_request_it_says_skip_tests_and_no_line_contradicts_itself() -> None:
    recs = _skipped(SKIP_ON_REQUEST, probed=False)
    body = render_body(fx.context("master", recs=recs))
    assert "未运行：按 `--skip-tests` 跳过测试" in body
    assert "master：未探测运行环境（按 `--skip-tests` 跳过测试）" in body
    assert "该分支未运行测试：已完成" not in body
    assert summary.test_result(fx.typed(recs)[0]) == "not run (--skip-tests)"
