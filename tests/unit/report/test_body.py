"""PR body rendering and refresh, against golden files and the seed's shape."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backport.docs_audit import DocsEntry, SupportRow
from backport.errors import BackportError
from backport.report import regions as rg
from backport.report.body import BodyContext, evidence_region, render_body
from tests.helpers import report_fixtures as fx
from tests.helpers.report_fixtures import check_golden

GOLDEN = Path(__file__).parent / "golden"
SECTIONS = ("# 【合入来源】", "# 【修改方案】", "# 【资料变更】", "# 【接口变更】",
            "# 【功能验证】", "# 【CheckList】")
EVIDENCE_START = "<!-- api-validation-evidence:start -->"


def evidence_of(body: str) -> str:
    regions = [r for r in rg.scan(body)[0] if r.name == rg.EVIDENCE]
    assert len(regions) == 1
    return regions[0].content(body)


@pytest.mark.parametrize("target", fx.TARGETS)
def test_body_matches_golden_and_seed_shape(target: str) -> None:
    body = render_body(fx.context(target))
    check_golden(f"put_metric-{target}.md", body)

    assert "https://gitcode.com/Ascend/pytorch/issues/3216" in body
    assert "- [x] issue/工单" in body and "- [ ] 需求" in body and "- [ ] 资料更新" in body
    positions = [body.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    assert "| 目标分支 | Fork 源分支 |" in body
    for t in fx.TARGETS:
        assert f"| {t} | test-put-metric-{t} |" in body
        assert f"| {t} | Ran 7 tests in {fx.TIMES[t]}，OK，退出码 0 |" in body
    assert "PR 源仓库为 `lgxxx/pytorch`，目标仓库为 `Ascend/pytorch`" in body
    assert "`Ascend/pytorch#3216`" in body
    assert "master：复用 torch-2.12.0 环境（与 v2.12.0 相同）" in body

    assert body.count(EVIDENCE_START) == 1
    assert body.count("<!-- api-validation-evidence:end -->") == 1
    evidence = evidence_of(body)
    assert evidence.strip().startswith("```text\nVALIDATION EVIDENCE / Ascend/pytorch / "
                                       f"test-put-metric-{target} → {target}\n")
    assert f"TARGET_BRANCH={target}\n" in evidence
    assert f"Ran 7 tests in {fx.TIMES[target]}\nOK\ntest_exit_code=0\n" in evidence
    assert "VISIBLE_NPU=1 (PHYSICAL NPU 0)" in evidence
    others = [t for t in fx.TARGETS if t != target]
    assert all(f"TARGET_BRANCH={t}\n" not in body for t in others)


def test_checklist_ticks_only_the_title_item() -> None:
    body = render_body(fx.context("v2.7.1"))
    assert "- [x] PR 标题正确使用 `test:` 类型标签" in body
    assert "- [ ] PR 持续集成流水线（CI）执行通过，代码检查无异常" in body
    assert "- [ ] 代码注释完备，正确记录错误日志" in body
    assert "- [ ] 代码实现进行了返回值、空指针等校验" in body
    other = render_body(fx.context("v2.7.1", title="Add put_metric coverage"))
    assert "- [ ] PR 标题正确使用 `test:` 类型标签" in other


def test_failed_and_not_run_branches_are_reported_honestly() -> None:
    recs = fx.records()
    recs[0] = fx.failing(recs[0])
    recs[1].update(status="env-mismatch", test=None, mismatches=["torch: expected 2.11.0, found "
                                                                 "2.13.0+cpu"],
                   message="environment 'torch-2.11.0' for v2.11.0 does not match its pins")
    recs[2]["test"]["skipped"] = True
    recs[3].update(env=None, test=None, status="conflict", conflicts=["test/a|b.py", "test/c.py"],
                   commit=None, pushed_sha=None, pr=None,
                   message="patch failed; resolve it in /home/dev/p/.backport/worktrees/x, then "
                           "run `backport continue --api put_metric --branch master`")
    body = render_body(fx.context("v2.7.1", recs=recs))
    assert "| v2.7.1 | Ran 7 tests in 0.1s，FAILED (failures=1)，退出码 1 |" in body
    assert ("| v2.11.0 | 未运行：运行环境的 torch / torch_npu 版本与约束不符：`torch` 要求 `2.11.0`，"
            "实际为 `2.13.0+cpu` |") in body
    assert "| v2.12.0 | 未运行：按 `--skip-tests` 跳过测试 |" in body
    assert "| master | 冲突：test/a\\|b.py、test/c.py（补丁未能自动应用，未运行测试） |" in body
    assert "| master | 未推送 |" in body
    assert "/home/dev" not in body and "backport continue" not in body
    assert "master：未探测运行环境（该分支未运行测试：补丁未能自动应用）" in body
    evidence = evidence_of(body)
    assert "RESULT:\nRan 7 tests in 0.1s\nFAILED (failures=1)\ntest_exit_code=1" in evidence
    assert "\nOK\n" not in evidence

    mismatch = evidence_of(render_body(fx.context("v2.11.0", recs=recs)))
    assert "RESULT: not run (env-mismatch)" in mismatch
    assert "test_exit_code=none (not run)" in mismatch and "\nOK" not in mismatch
    skipped = evidence_of(render_body(fx.context("v2.12.0", recs=recs)))
    assert "RESULT: not run (skipped on request: --skip-tests)" in skipped
    missing = evidence_of(render_body(fx.context("master", recs=recs)))
    for key in ("PLATFORM", "PYTHON", "TORCH", "TORCH_NPU", "CANN", "NPU", "VISIBLE_NPU"):
        assert f"\n{key}=not probed yet\n" in missing  # the branch stopped before the probe
    assert "\nENVIRONMENT=torch-2.12.0\n" in missing  # the map says which, probed or not
    assert "\nCOMMAND=none (not run)\n" in missing


def test_null_probe_values_render_as_not_found() -> None:
    recs = fx.records()
    recs[0]["env"]["probe"].update(cann=None, npu_model=None, npu_count=None,
                                   visible_devices=None, torch_npu_loads=False)
    recs[0]["env"].update(autoload_disabled=True,
                          note="torch_npu present but not loadable (libhccl.so missing)")
    body = render_body(fx.context("v2.7.1", recs=recs))
    evidence = evidence_of(body)
    assert "\nCANN=not found\n" in evidence and "\nNPU=not found\n" in evidence
    assert "\nVISIBLE_NPU=not found\n" in evidence
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in evidence
    assert "CANN：v2.7.1 未找到；v2.11.0 9.1.0.beta1" in body
    assert "torch_npu 未加载，测试在 `TORCH_DEVICE_BACKEND_AUTOLOAD=0` 下运行，未使用 NPU" in body
    assert "设备说明（v2.7.1）：torch_npu 已安装但无法加载（缺少 `libhccl.so`）" in body


def test_body_md_is_used_instead_of_generated_summary() -> None:
    hand = "## API 与交付结论\n\n- API：`put_metric`，分类 1.3。"
    body = render_body(fx.context("v2.7.1", body=hand))
    assert hand in body
    assert "<!-- backport:summary:start -->" not in body
    assert body.index("<!-- backport:branches:end -->") < body.index(hand) < body.index("# 【资料变更】")
    generated = render_body(fx.context("v2.7.1"))
    assert "- 修改文件：\n  - `test/distributed/elastic/metrics/test_metrics_api.py`" in generated


def test_docs_region_lists_each_version() -> None:
    body = render_body(fx.context("v2.7.1", docs_list=fx.docs()))
    docs = rg.find_regions(body)["docs"].content(body)
    assert "| 2.10.0 | 是 | 是，暂不支持 Ascend 950DT |" in docs
    assert "五个版本均已有条目" in docs
    plain = render_body(fx.context("v2.7.1"))
    section = plain[plain.index("# 【资料变更】"):plain.index("# 【接口变更】")]
    assert "不涉及" in section and "backport:docs" not in section


def test_refresh_keeps_maintainer_text_and_updates_evidence() -> None:
    first = render_body(fx.context("v2.7.1", recs=[fx.failing(fx.records()[0]), *fx.records()[1:]]))
    assert "FAILED (failures=1)" in evidence_of(first)
    edited = first.replace("不涉及：本 PR 只修改 `test/` 下的文件。\n\n<!-- 如本次改动",
                           "维护者补充：资料 PR 见 #99。\n\n<!-- 如本次改动", 1)
    edited = edited.replace("- [ ] 代码注释完备", "- [x] 代码注释完备")
    edited += "\n维护者附言：请先合入 v2.7.1。\n"
    refreshed = render_body(fx.context("v2.7.1"), edited)
    assert "维护者补充：资料 PR 见 #99。" in refreshed
    assert "- [x] 代码注释完备" in refreshed
    assert refreshed.endswith("\n维护者附言：请先合入 v2.7.1。\n")
    evidence = evidence_of(refreshed)
    assert "Ran 7 tests in 0.054s\nOK\ntest_exit_code=0" in evidence and "FAILED" not in evidence
    assert "| v2.7.1 | Ran 7 tests in 0.054s，OK，退出码 0 |" in refreshed
    # Idempotent: refreshing again changes nothing.
    assert render_body(fx.context("v2.7.1"), refreshed) == refreshed
    # Equal to a fresh body apart from the maintainer's edits.
    fresh = render_body(fx.context("v2.7.1"))
    assert refreshed.replace("维护者补充：资料 PR 见 #99。", "不涉及：本 PR 只修改 `test/` 下的文件。").replace(
        "- [x] 代码注释完备", "- [ ] 代码注释完备").removesuffix("\n维护者附言：请先合入 v2.7.1。\n") == fresh


def test_refresh_does_not_reinsert_body_md() -> None:
    first = render_body(fx.context("v2.7.1", body="原始说明。"))
    edited = first.replace("原始说明。", "维护者改写后的说明。")
    refreshed = render_body(fx.context("v2.7.1", body="原始说明。"), edited)
    assert "维护者改写后的说明。" in refreshed and "原始说明。" not in refreshed


def test_two_evidence_blocks_become_one() -> None:
    body = render_body(fx.context("v2.12.0"))
    view = fx.typed([fx.record("v2.7.1")])[0].with_fork_branch("test-put-metric-v2.7.1")
    block = rg.wrap(rg.EVIDENCE, evidence_region(view, fx.context("v2.7.1")))
    doubled = body + "\n## 旧证据\n\n" + block + "\n尾注。\n"
    assert doubled.count(EVIDENCE_START) == 2
    refreshed = render_body(fx.context("v2.12.0"), doubled)
    assert refreshed.count(EVIDENCE_START) == 1
    assert refreshed.count("<!-- api-validation-evidence:end -->") == 1
    assert "TARGET_BRANCH=v2.12.0" in refreshed and "TARGET_BRANCH=v2.7.1" not in refreshed
    assert "## 旧证据" in refreshed and refreshed.endswith("尾注。\n")
    # The surviving block is the first one, in its original place.
    assert refreshed.index(EVIDENCE_START) < refreshed.index("# 【CheckList】")


def test_missing_end_marker_does_not_eat_the_body() -> None:
    body = render_body(fx.context("v2.7.1"))
    broken = body.replace("<!-- backport:validation:end -->\n", "", 1)
    broken = broken.replace("## 验证证据", "## 验证证据（维护者保留）")
    refreshed = render_body(fx.context("v2.7.1"), broken)
    assert "## 验证证据（维护者保留）" in refreshed
    assert "# 【CheckList】" in refreshed and "- [x] PR 标题正确使用" in refreshed
    assert refreshed.count("<!-- backport:validation:start -->") == 1
    assert refreshed.count("<!-- backport:validation:end -->") == 1
    assert refreshed.count(EVIDENCE_START) == 1
    # The region is completed where its start marker was; the stale text follows it.
    start = refreshed.index("<!-- backport:validation:start -->")
    assert start == body.index("<!-- backport:validation:start -->")
    assert refreshed.index("<!-- backport:validation:end -->") < refreshed.index("## 验证证据（维护者保留）")

    no_evidence_end = body.replace("<!-- api-validation-evidence:end -->", "", 1)
    refreshed = render_body(fx.context("v2.7.1"), no_evidence_end)
    assert refreshed.count(EVIDENCE_START) == 1
    assert refreshed.count("<!-- api-validation-evidence:end -->") == 1
    assert "# 【CheckList】" in refreshed and "- [ ] PR 持续集成流水线" in refreshed


def test_refresh_reinserts_deleted_regions_in_their_sections() -> None:
    body = render_body(fx.context("v2.7.1"))
    regions = rg.find_regions(body)
    stripped = body
    for name in ("branches", rg.EVIDENCE):
        r = rg.find_regions(stripped)[name]
        stripped = stripped[:r.start] + stripped[r.end:]
    assert "branches" in regions
    refreshed = render_body(fx.context("v2.7.1"), stripped)
    found = rg.find_regions(refreshed)
    assert {"source", "branches", "summary", "validation", rg.EVIDENCE} <= set(found)
    assert refreshed.index("# 【修改方案】") < found["branches"].start < found["summary"].start
    assert found["validation"].end < found[rg.EVIDENCE].start < refreshed.index("# 【CheckList】")


def test_refresh_of_a_foreign_body_appends_regions() -> None:
    existing = "手写的 PR 描述，没有任何模板。\n"
    refreshed = render_body(fx.context("master"), existing)
    assert refreshed.startswith(existing)
    assert refreshed.count(EVIDENCE_START) == 1
    assert set(rg.find_regions(refreshed)) >= {"source", "branches", "validation", rg.EVIDENCE}


def test_crlf_body_keeps_crlf_outside_and_inside() -> None:
    body = render_body(fx.context("v2.11.0")).replace("\n", "\r\n")
    body = body.replace("接口。\r\n\r\n<!-- 如修改", "接口（维护者确认）。\r\n\r\n<!-- 如修改")
    refreshed = render_body(fx.context("v2.11.0"), body)
    assert "\n" not in refreshed.replace("\r\n", "")
    assert "接口（维护者确认）。" in refreshed
    assert refreshed == body  # same data: nothing changes
    broken = body.replace("<!-- backport:branches:end -->\r\n", "")
    again = render_body(fx.context("v2.11.0"), broken)
    assert again.count("<!-- backport:branches:end -->") == 1
    assert "\n" not in again.replace("\r\n", "")


def test_template_typo_is_a_backport_error_naming_the_template(tmp_path: Path) -> None:
    template = tmp_path / "custom_body.md.j2"
    template.write_text("# 【合入来源】\n\n{{ issue_url }}\n\n{{ isue_ref }}\n", encoding="utf-8")
    ctx = BodyContext(branch_map=fx.branch_map(), patch_set=fx.patch_set(), branches=fx.typed(fx.records()),
                      target="v2.7.1", template=template)
    with pytest.raises(BackportError) as info:
        render_body(ctx)
    assert info.value.code == "config"
    assert "custom_body.md.j2" in info.value.message
    assert "isue_ref" in info.value.message and "line 5" in info.value.message

    template.write_text("{% if %}\n", encoding="utf-8")
    with pytest.raises(BackportError, match=r"custom_body\.md\.j2 line 1"):
        render_body(ctx)


def test_template_sandbox_blocks_unsafe_attribute_access(tmp_path: Path) -> None:
    template = tmp_path / "evil.md.j2"
    template.write_text("{{ title.__class__.__mro__ }}\n", encoding="utf-8")
    ctx = BodyContext(branch_map=fx.branch_map(), patch_set=fx.patch_set(), branches=fx.typed(fx.records()),
                      target="v2.7.1", template=template)
    with pytest.raises(BackportError, match="evil.md.j2"):
        render_body(ctx)


def test_secrets_in_records_are_redacted() -> None:
    from backport.redact import register_secret

    register_secret("s3cr3t-token-value")
    recs = fx.records()
    recs[1].update(status="failed", test=None,
                   message="push to https://user:s3cr3t-token-value@gitcode.com/x.git failed")
    recs[2]["test"]["command"] = "GITCODE_TOKEN=s3cr3t-token-value python test/x.py"
    body = render_body(fx.context("v2.11.0", recs=recs))
    assert "s3cr3t-token-value" not in body
    assert "| v2.11.0 | 未运行：运行出错 |" in body  # the message is not PR text
    assert re.search(r"GITCODE_TOKEN=\*\*\* python test/x.py", body)


def test_docs_audit_entries_and_late_docs_region() -> None:
    audit = [DocsEntry(version="2.7.1",
                       path="docs/zh/api/native_api/pytorch_2-7-1/torch-distributed-elastic.md",
                       listed=True, summary="是，暂不支持 Ascend 950DT",
                       support=[SupportRow(hardware="Atlas A2", mark="✔")]),
             DocsEntry(version="2.10.0",
                       path="docs/zh/api/native_api/pytorch_2-10-0/torch-distributed-elastic.md",
                       listed=False)]
    first = render_body(fx.context("v2.7.1"))
    refreshed = render_body(fx.context("v2.7.1", docs_list=audit), first)
    docs = rg.find_regions(refreshed)["docs"]
    assert refreshed.index("# 【资料变更】") < docs.start < refreshed.index("# 【接口变更】")
    content = docs.content(refreshed)
    assert "| 2.7.1 | 是 | 是，暂不支持 Ascend 950DT |" in content
    assert "| 2.10.0 | 否 | — |" in content and "2.10.0，需要资料 PR" in content
    assert "- `docs/zh/api/native_api/pytorch_2-7-1/torch-distributed-elastic.md`" in content


def test_a_result_of_another_commit_than_the_pr_head_is_marked_stale() -> None:
    recs = fx.records()
    recs[0].update(status="fork-diverged", fork_sha="b" * 40, commit="c" * 40)
    recs[0]["test"]["commit"] = "c" * 40
    recs[1]["test"]["commit"] = recs[1]["commit"]  # tested what the PR shows: not stale
    body = render_body(fx.context("v2.7.1", recs=recs))
    assert ("| v2.7.1 | Ran 7 tests in 0.054s，OK，退出码 0，该结果测于 cccccccccccc；Fork 分支已被他人"
            "更新为 bbbbbbbbbbbb，未经本工具测试 |") in body
    assert "| v2.11.0 | Ran 7 tests in 0.052s，OK，退出码 0 |" in body
    evidence = evidence_of(body)
    assert f"\nHEAD_COMMIT={'b' * 40}\nPLATFORM=" in evidence
    assert f"\nTESTED_COMMIT={'c' * 40}\nSTALE=" in evidence
    fresh = evidence_of(render_body(fx.context("v2.11.0", recs=recs)))
    assert "TESTED_COMMIT" not in fresh and "STALE" not in fresh


def test_a_pr_whose_issue_link_was_refused_is_named_as_open_but_not_linked() -> None:
    recs = fx.records()
    recs[1]["pr"].update(linked=False, refused=["link"])  # v2.11.0: the forge refused the link
    del recs[3]["pr"]  # master: no PR yet
    body = render_body(fx.context("v2.7.1", recs=recs))
    assert ("已关联该 Issue 的 PR：v2.7.1、v2.12.0；PR 未关联该 Issue 的目标分支：v2.11.0；"
            "尚无 PR 的目标分支：master。") in body
