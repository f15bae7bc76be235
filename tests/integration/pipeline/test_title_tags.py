"""A from-PR backport's title: the source branch's tag dropped, the target's added where the map
asks (`title_tag:`); the GitCode stand-in on 127.0.0.1 and the sandbox's real git."""

from __future__ import annotations

import yaml

from tests.helpers.project import edit_config
from tests.helpers.source_pr import NUMBER, OTHERS, land, run, source_pr

TITLE = "[master] test: add test cases for torch.is_conj"


def test_the_source_tag_goes_and_the_targets_tag_comes_where_asked(sandbox, server):
    edit_config(sandbox, lambda d: d["branches"]["v2.7.1"].update(title_tag="[v2.7.1]"))
    pr = source_pr(server, state="merged", issues=[])
    pr.title = TITLE
    land(sandbox, NUMBER, pr.head_ref)
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests")
    assert result.code == 0, result.err
    spec = yaml.safe_load((sandbox.project / "patches" / f"pr-{NUMBER}" / "patch.yaml")
                          .read_text("utf-8"))
    assert spec["title"] == "test: add test cases for torch.is_conj"
    patches = sorted((sandbox.project / "patches" / f"pr-{NUMBER}").glob("*.patch"))
    subjects = [line for path in patches for line in path.read_text("utf-8").splitlines()
                if line.startswith("Subject:")]
    assert subjects == ["Subject: [PATCH] test: add test cases for torch.is_conj"]
    titles = {p.base_ref: p.title for p in server.open_prs() if p.head_repo == "lgxxx/pytorch"}
    assert sorted(titles) == sorted(OTHERS)
    assert titles == {"v2.7.1": "[v2.7.1] test: add test cases for torch.is_conj",
                      "v2.11.0": "test: add test cases for torch.is_conj",
                      "v2.12.0": "test: add test cases for torch.is_conj"}
