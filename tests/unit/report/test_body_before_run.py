"""A PR body rendered before any run (what `preview` prints first) says plainly what is unknown."""

from __future__ import annotations

import re

from backport.records import BranchRecord
from backport.report.body import BodyContext, render_body
from tests.helpers import report_fixtures as fx


def _before_any_run(target: str) -> str:
    bm, ps = fx.branch_map(), fx.patch_set()
    blank = [BranchRecord(t, ps.fork_branch(bm, t)) for t in fx.TARGETS]
    return render_body(BodyContext(branch_map=bm, patch_set=ps, branches=blank, target=target,
                                   docs=fx.docs()))


def test_unprobed_environment_reads_the_same_in_prose_and_evidence() -> None:
    body = _before_any_run("v2.7.1")
    assert "主机平台：未探测\n" in body
    assert "\nPLATFORM=not probed yet\n" in body
    assert "未找到" not in body.split("<!-- api-validation-evidence:start -->")[0]
    assert "\nPLATFORM=not probed\n" not in body


def test_no_empty_list_of_linked_prs() -> None:
    body = _before_any_run("v2.7.1")
    assert "已关联该 Issue 的 PR：；" not in body
    assert not re.search(r"：[；。]", body), re.search(r".{20}：[；。].{20}", body)
    assert "尚无 PR 的目标分支：v2.7.1、v2.11.0、v2.12.0、master。" in body
