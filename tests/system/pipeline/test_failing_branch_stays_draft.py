"""One set of four against a GitCode stand-in that derives draft from the title sent: the
branch whose test fails keeps its draft PR through the sibling refresh (issue 50 item 7)."""

from __future__ import annotations

import sys

from tests.fakes.gitcode import WIP
from tests.helpers.project import TOKEN, edit_config, needs_torch, run_app

pytestmark = needs_torch

FAILING = "v2.7.1"


def test_the_failing_branchs_pr_stays_draft_and_no_patch_drops_its_marker(sandbox, gitcode):
    gitcode.draft_from_title = True  # a PATCH whose title lacks [WIP] turns the PR ready

    def no_torch_for_one_branch(data: dict) -> None:  # its test dies on `import torch`
        data["environments"]["no-torch"] = {"python": sys.executable,
                                            "env": {"PYTHONDONTWRITEBYTECODE": "1"}}
        data["branches"][FAILING]["env"] = "no-torch"
    edit_config(sandbox, no_torch_for_one_branch)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--pr-on-failure",
                     "--isolated", "--json", env={"GITCODE_TOKEN": TOKEN,
                                                  "BACKPORT_GITCODE_SETTLE": "0.05"})
    assert result.code == 1, result.err
    statuses = {b["target"]: b["status"] for b in result.json()["branches"]}
    assert statuses == {FAILING: "test-failed", "v2.11.0": "done", "v2.12.0": "done",
                        "master": "done"}, result.err
    (failing,) = gitcode.open_prs(base=FAILING)
    assert failing.draft and failing.title.startswith(WIP)
    assert not any(pr.draft for pr in gitcode.open_prs() if pr.base_ref != FAILING)
    patched = [r for r in gitcode.requests if r.method == "PATCH"
               and r.path.endswith(f"/pulls/{failing.number}")]
    assert patched  # its body was written before the later PRs existed, then refreshed
    assert all(str(r.body["title"]).startswith(WIP) for r in patched), patched
