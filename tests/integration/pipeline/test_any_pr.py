"""`apply --from-pr N` for any PR: one that names no API and links no issue, or several issues,
is backported without a question (the GitCode stand-in on 127.0.0.1, the sandbox's real git)."""

from __future__ import annotations

import yaml

from backport.demo.sandbox import Sandbox
from tests.helpers.source_pr import NUMBER, OTHERS, land, run, source_pr

TITLE = "fix: keep the metric handler across forks"


def spec(sandbox: Sandbox) -> dict:
    path = sandbox.project / "patches" / f"pr-{NUMBER}" / "patch.yaml"
    return yaml.safe_load(path.read_text("utf-8"))


def opened(server) -> dict:
    return {p.base_ref: p for p in server.open_prs() if p.head_repo == "lgxxx/pytorch"}


def test_a_pr_naming_no_api_and_no_issue_is_backported_without_asking(sandbox, server):
    pr = source_pr(server, state="merged", issues=[])
    pr.title, pr.body = TITLE, "修复 metric handler 在 fork 后丢失的问题。\n"
    land(sandbox, NUMBER, pr.head_ref)
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests")
    assert result.code == 0, result.err
    data = spec(sandbox)
    assert "api" not in data and "issue" not in data
    assert data["title"] == TITLE
    prs = opened(server)
    assert sorted(prs) == sorted(OTHERS)
    for p in prs.values():
        assert p.title == TITLE and p.issues == []
        assert f"[Ascend/pytorch!{NUMBER}]" in p.body
        assert "API：" not in p.body and "\nAPI=" not in p.body  # neither line nor evidence key
        assert "任务书 Issue" not in p.body and "关联该 Issue" not in p.body
        assert "源 PR 未关联 Issue" in p.body
        assert "不涉及：本 PR 只修改 `test/` 下的文件。" in p.body  # 资料变更, without an audit
        assert "已检查" not in p.body
        assert "- [x] issue/工单" not in p.body


def test_a_pr_linking_several_issues_links_each_backport_to_all(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216, 3217])
    land(sandbox, NUMBER, pr.head_ref)
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests")
    assert result.code == 0, result.err
    assert spec(sandbox)["issue"] == [3216, 3217]
    prs = opened(server)
    assert sorted(prs) == sorted(OTHERS)
    for p in prs.values():
        assert sorted(p.issues) == [3216, 3217]
        assert "Ascend/pytorch#3216" in p.body and "Ascend/pytorch#3217" in p.body
        assert "API：`torch.distributed.elastic.metrics.put_metric`" in p.body
