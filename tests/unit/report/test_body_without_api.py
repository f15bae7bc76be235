"""The body of a set made from a PR that names no API and links none, one or several issues:
every sentence true, none about an API or an issue the set does not have."""

from __future__ import annotations

import dataclasses

from backport.config.model import SourcePr
from backport.report.body import render_body
from tests.helpers import report_fixtures as fx

SOURCE = SourcePr(number=4281, base="master", commit="c" * 40, merged=True,
                  found_by="squash message")
CODE = "torch_npu/utils/_metrics.py"


def body(*, issues: tuple[int, ...], api: str | None = None, paths=(fx.TEST_PATH,)) -> str:
    ctx = fx.context("v2.7.1")
    ps = dataclasses.replace(ctx.patch_set, api=api, issues=issues, source=SOURCE,
                             touched_paths={t: tuple(paths) for t in fx.TARGETS})
    return render_body(dataclasses.replace(ctx, patch_set=ps))


def test_no_api_leaves_out_the_api_line_and_the_evidence_key_and_says_why_for_docs() -> None:
    text = body(issues=(), paths=(fx.TEST_PATH, CODE))
    assert "API：" not in text and "\nAPI=" not in text
    assert ("源 PR 未指明 API，未按 API 检查资料条目。请确认是否涉及资料变更：如涉及，需要在PR中体现，"
            "并简要说明修改内容；如不涉及，需填写“不涉及”。") in text
    assert "已检查" not in text and "API 调查结论" not in text
    assert "SOURCE=Ascend/pytorch!4281@" + "c" * 40 in text


def test_no_issue_says_so_and_claims_no_link() -> None:
    text = body(issues=())
    assert "源 PR 未关联 Issue。" in text
    assert "Issue：`" not in text and "关联该 Issue" not in text and "关联这些 Issue" not in text
    assert "/issues/" not in text
    assert "- [ ] issue/工单" in text


def test_several_issues_are_each_named_and_linked() -> None:
    text = body(issues=(3216, 3217), api="torch.x.y")
    assert ("关联 Issue：https://gitcode.com/Ascend/pytorch/issues/3216、"
            "https://gitcode.com/Ascend/pytorch/issues/3217") in text
    assert "关联 Issue：`Ascend/pytorch#3216`、`Ascend/pytorch#3217`。" in text
    assert "这些 Issue" in text and "该 Issue" not in text and "任务书" not in text
    assert "- API：`torch.x.y`" in text and "\nAPI=torch.x.y\n" in text
