"""`apply --from-pr N` for a merged PR that changes no test file (most of Ascend's real
backports): the set lists no test, each branch records its tests as not run because the source
PR has none, and each PR body says so without claiming any validation."""

from __future__ import annotations

import yaml

from backport.report import wording as zh
from tests.helpers.source_pr import NUMBER, OTHERS, code_only_pr, run

CODE = "torch_npu/utils/_foo.py"
TITLE = "fix: keep the foo handler across forks"


def test_new_from_a_pr_changing_no_test_writes_a_set_listing_none(sandbox, server):
    code_only_pr(sandbox, server, CODE, TITLE)
    result = run(sandbox, "new", f"pr-{NUMBER}", "--from-pr", str(NUMBER))
    assert result.code == 0, result.err
    assert "adds or changes no test file" in result.out + result.err
    data = yaml.safe_load((sandbox.project / "patches" / f"pr-{NUMBER}" / "patch.yaml")
                          .read_text("utf-8"))
    assert data["tests"] == [] and data["source_pr"] == NUMBER


def test_a_pr_changing_no_test_gets_a_set_and_prs_that_say_no_test_ran(sandbox, server):
    code_only_pr(sandbox, server, CODE, TITLE)
    result = run(sandbox, "apply", "--from-pr", str(NUMBER))
    assert result.code == 0, result.err
    data = yaml.safe_load((sandbox.project / "patches" / f"pr-{NUMBER}" / "patch.yaml")
                          .read_text("utf-8"))
    assert data["tests"] == [] and data["source_pr"] == NUMBER
    prs = {p.base_ref: p for p in server.open_prs() if p.head_repo == "lgxxx/pytorch"}
    assert sorted(prs) == sorted(OTHERS)
    for p in prs.values():
        assert not p.draft  # the existing rule: a test not run does not make a draft
        assert p.title == TITLE
        assert f"[Ascend/pytorch!{NUMBER}]" in p.body
        assert CODE in p.body
        assert "- 测试：无（源 PR 未新增或修改测试）" in p.body
        assert "未运行：源 PR 未新增或修改测试，没有可运行的测试" in p.body
        assert zh.NO_TESTS_NOTE in p.body
        assert "RESULT: not run (no test: the source PR adds or changes no test)" in p.body
        assert "只修改 `test/` 下的文件" not in p.body  # it changes code
        assert "skip-tests" not in p.body and "Ran " not in p.body and "OK" not in p.body
    again = run(sandbox, "apply", "--from-pr", str(NUMBER))  # a re-run duplicates nothing
    assert again.code == 0, again.err
    assert sorted(p.number for p in server.open_prs() if p.head_repo == "lgxxx/pytorch") \
        == sorted(p.number for p in prs.values())
