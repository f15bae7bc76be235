"""Every "not run" says its true cause: --skip-tests only when the user passed it."""

from __future__ import annotations

import dataclasses

from backport.codec import encode
from backport.records import SKIP_NO_TESTS, SKIP_NO_TORCH, SKIP_ON_REQUEST
from backport.records import TestResult as Result
from backport.report import summary
from backport.report.body import render_body
from tests.helpers import report_fixtures as fx


def _skipped(cause: str, *, probed: bool) -> list[dict]:
    recs = fx.records()
    for rec in recs:
        if not probed:
            rec.pop("env")
        rec["test"] = encode(Result.skipped_for(cause))
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


def test_a_set_with_no_test_says_none_ran_because_the_source_pr_has_none() -> None:
    recs = _skipped(SKIP_NO_TESTS, probed=False)
    ctx = fx.context("master", recs=recs)
    ctx = dataclasses.replace(ctx, patch_set=dataclasses.replace(ctx.patch_set, tests=()))
    body = render_body(ctx)
    assert "skip-tests" not in body, body
    assert "未运行：源 PR 未新增或修改测试，没有可运行的测试" in body
    assert "master：未探测运行环境（源 PR 未新增或修改测试，没有可运行的测试）" in body
    assert "- 测试：无（源 PR 未新增或修改测试）" in body
    assert ("本 PR 未经本地测试验证：源 PR 未新增或修改测试，本工具没有运行任何测试；"
            "改动是否正确以评审和 PR CI 结果为准。") in body
    assert "RESULT: not run (no test: the source PR adds or changes no test)" in body
    assert summary.test_result(fx.typed(recs)[0]) == ("not run (no test: the source PR adds or "
                                                      "changes no test)")
