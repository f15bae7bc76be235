"""`apply --from-pr N`: a target that already has a PR carrying !N (the sync bot's, GitCode's
cherry-pick, or one whose body names it) gets no new PR and reports that PR (GitCode stand-in,
real HTTP on 127.0.0.1; the sandbox's real upstream repository)."""

from __future__ import annotations

import json

from backport.demo.sandbox import Sandbox
from backport.forge.local import LocalForge
from tests.commands.test_from_pr import (  # noqa: F401 - `server` is a fixture
    NUMBER,
    OTHERS,
    land,
    run,
    server,
    source_pr,
)
from tests.helpers.fake_gitcode import FakeGitCode

OURS = "lgxxx/pytorch"


def _ours(server: FakeGitCode) -> dict[str, int]:
    return {p.base_ref: p.number for p in server.prs.values() if p.head_repo == OURS}


def _branches(result) -> dict[str, dict]:
    data = json.loads(result.out)
    return {b["target"]: b for b in data["branches"]}


def test_a_sync_bot_pr_and_a_merged_cherry_pick_block_and_a_near_miss_does_not(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    sync = server.add_pr(head_repo="Ascend/pytorch",
                         head=f"sync-pr{NUMBER}-{pr.head_ref}-to-v2.7.1", base="v2.7.1",
                         title=f"[sync] PR-{NUMBER}: test: add put_metric coverage",
                         body="sync from master", author="ascend-robot")
    picked = server.add_pr(head_repo="Ascend/pytorch",
                           head=f"cherry-pick-mr-{NUMBER}-1733000000-auto", base="v2.11.0",
                           title="test: add put_metric coverage", body=pr.body,
                           state="merged", author="someone")
    near = server.add_pr(head_repo="someone/pytorch", head=f"sync-pr{NUMBER}0-x-to-v2.12.0",
                         base="v2.12.0", title=f"[sync] PR-{NUMBER}0: something else",
                         body=f"from !{NUMBER}0 and Ascend/op-plugin!{NUMBER}",
                         author="someone")

    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json")
    assert result.code == 0, result.err
    ours = _ours(server)
    assert sorted(ours) == ["v2.12.0"]  # only the near miss's target got a PR
    branches = _branches(result)
    assert branches["v2.7.1"]["status"] == "already-proposed"
    assert branches["v2.7.1"]["proposed"]["number"] == sync.number
    assert branches["v2.7.1"]["proposed"]["url"].endswith(f"/merge_requests/{sync.number}")
    assert branches["v2.7.1"]["proposed"]["kind"] == "sync"
    assert branches["v2.11.0"]["status"] == "already-proposed"
    assert branches["v2.11.0"]["proposed"]["number"] == picked.number
    assert branches["v2.11.0"]["proposed"]["kind"] == "cherry-pick"
    assert branches["v2.11.0"]["proposed"]["state"] == "merged"
    assert branches["v2.12.0"]["status"] == "done"
    assert near.number not in {b["pr"]["number"] for b in branches.values() if b["pr"]}

    status = run(sandbox, "status", "--api", f"pr-{NUMBER}")
    assert status.code == 0, status.err
    assert f"already proposed in PR !{sync.number}" in status.out
    assert f"already proposed in PR !{picked.number}" in status.out
    body = server.prs[ours["v2.12.0"]].body
    assert f"!{sync.number}" in body and f"!{picked.number}" in body


def test_a_body_naming_the_pr_blocks_and_our_own_pr_is_refreshed_not_blocking(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    first = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json")
    assert first.code == 0, first.err
    ours = _ours(server)
    assert sorted(ours) == sorted(OTHERS)  # our own bodies name !N: they must not block us
    handmade = server.add_pr(head_repo="someone/pytorch", head="backport-put-metric",
                             base="v2.12.0", title="backport put_metric test",
                             body=f"Cherry-picked from Ascend/pytorch!{NUMBER}.",
                             author="someone")
    again = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--force", "--json")
    assert again.code == 0, again.err
    assert _ours(server) == ours  # refreshed as today, no second PR
    assert {b["status"] for b in _branches(again).values()} == {"done"}
    assert handmade.number not in ours.values()
