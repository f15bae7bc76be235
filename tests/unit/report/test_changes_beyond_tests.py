"""How a result reads where the series changes more than tests: the overlay named, a change
not in the build never shown as a plain pass, in the body, the evidence and the run table."""

from __future__ import annotations

import copy

from backport.pipeline.pr_step import draft_implied
from backport.report import summary
from backport.report.body import render_body
from tests.helpers import report_fixtures as fx
from tests.helpers.evidence import evidence_fields, shared_record

CPP = "torch_npu/csrc/core/npu/NPUVersion.cpp"
PY = "torch_npu/_compat/version.py"


def _records(changes: dict) -> list[dict]:
    recs = copy.deepcopy(fx.records())
    for rec in recs:
        rec["test"]["changes"] = changes
    return recs


def _result_row(body: str, target: str) -> str:
    rows = [line for line in body.split("## 本地验证结果", 1)[1].splitlines()
            if line.startswith(f"| {target} |")]
    assert len(rows) == 1
    return rows[0]


def test_a_change_not_in_the_build_is_not_a_plain_pass_and_reads_back() -> None:
    recs = _records({"not_in_build": [CPP], "not_exercised": ["README.md"]})
    body = render_body(fx.context("master", recs=recs))
    row = _result_row(body, "master")
    assert row.startswith("| master | Ran 7 tests in 0.086s，OK，")
    assert f"未验证改动（证据中的 `NOT_IN_BUILD`）：`{CPP}` 不在所测的 torch_npu 构建中" in row
    # One note for the four branches that share it, under the table.
    assert body.count("上表结果不能证明该改动有效") == 1
    assert f"v2.7.1、v2.11.0、v2.12.0、master：补丁修改的 `{CPP}` 不在所测的构建中：测试使用运行环境中已安装的 torch_npu，其中不包含这些改动" in body
    assert "v2.7.1、v2.11.0、v2.12.0、master：补丁修改的 `README.md` 既不是测试也不是" in body
    fields = evidence_fields(body)
    assert fields["NOT_IN_BUILD"] == CPP
    assert fields["NOT_EXERCISED"] == "README.md"
    assert "OVERLAY" not in fields
    # Another host reading this PR keeps it a draft: its pass does not validate the change.
    rec = shared_record(body, "master")
    assert rec.test is not None and rec.test.ok and rec.test.not_in_build
    assert draft_implied(rec, fx.patch_set())
    assert "not in build (not validated): " + CPP in summary.test_result(rec)
    assert f"{CPP} is not in the build the tests ran on: the result does not validate the " \
        "change (its PR is a draft); test it on a build that holds it" in summary.apply_notes(rec)


def test_an_overlaid_run_says_which_files_it_saw_and_stays_a_plain_pr() -> None:
    recs = _records({"overlay": [PY]})
    body = render_body(fx.context("v2.11.0", recs=recs))
    assert f"torch_npu 中的 `{PY}` 以该分支的版本运行" in _result_row(body, "v2.11.0")
    assert f"补丁修改了 torch_npu 的 Python 文件 `{PY}`。测试使用运行环境中已安装的" in body
    fields = evidence_fields(body)
    assert fields["OVERLAY"] == PY
    assert "NOT_IN_BUILD" not in fields and "未验证改动" not in body
    rec = shared_record(body, "v2.11.0")
    assert not draft_implied(rec, fx.patch_set())
    assert summary.test_result(rec).endswith(f"torch_npu overlay: {PY}")


def test_a_test_only_series_adds_nothing() -> None:
    body = render_body(fx.context("master", recs=fx.records()))
    assert not {"OVERLAY", "NOT_IN_BUILD", "NOT_EXERCISED"} & set(evidence_fields(body))
    assert "torch_npu 构建" not in body and "以该分支的版本运行" not in body
