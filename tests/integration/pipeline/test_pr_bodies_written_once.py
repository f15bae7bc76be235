"""The PR bodies of a run against the GitCode stand-in: no PATCH drops a draft's ``[WIP] ``."""

from __future__ import annotations

import pytest

from tests.helpers.fake_gitcode import WIP
from tests.helpers.project import TOKEN, edit_config, run_app

FAST = {"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.05"}


@pytest.mark.parametrize("mode", ["draft_from_title", "draft_by_title"])
def test_no_patch_drops_the_draft_marker_of_a_pr_that_stays_draft(sandbox, gitcode, mode):
    """The patch set asks for drafts; the service derives draft from a title sent."""
    setattr(gitcode, mode, True)
    edit_config(sandbox, lambda data: data.setdefault("pr", {}).update(draft=True))
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", env=FAST)
    assert result.code == 0, result.err
    prs = gitcode.open_prs()
    assert len(prs) == 4
    assert all(pr.draft and pr.title.startswith(WIP) for pr in prs), [pr.title for pr in prs]
    patches = [r for r in gitcode.requests if r.method == "PATCH"]
    assert patches  # the bodies written before the later PRs existed were rewritten
    assert all(str(r.body["title"]).startswith(WIP) for r in patches), patches
