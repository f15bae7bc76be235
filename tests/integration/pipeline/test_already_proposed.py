"""`apply --from-pr N`: a target that already has a PR carrying !N (the sync bot's, GitCode's
cherry-pick, this tool's) gets no new PR; a body that only mentions it carries nothing and reports that PR (GitCode stand-in,
real HTTP on 127.0.0.1, and the local forge; the sandbox's real upstream repository)."""

from __future__ import annotations

import json

from backport.config import load_project
from backport.demo.sandbox import SOURCE_HEAD, Sandbox, land_merged_pr
from backport.forge import PrFile
from backport.forge.local import LocalForge
from tests.fakes.gitcode import FakeGitCode
from tests.helpers.project import PATCHES, run_app
from tests.helpers.source_pr import (
    BODY,
    NUMBER,
    OTHERS,
    land,
    put_metric_files,
    run,
    source_pr,
)

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


def test_a_maintainers_carrier_blocks_until_closed_a_mention_never_and_our_own_prs_never_do(
        sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    handmade = server.add_pr(head_repo="someone/pytorch", head="backport-put-metric",
                             base="v2.11.0", title=f"[sync] PR-{NUMBER}: put_metric test",
                             body="by hand", author="someone")
    # a mention in prose carries nothing (issue 47 item 6), whoever writes it
    server.add_pr(head_repo="someone/pytorch", head="note", base="v2.7.1", title="docs: note",
                  body=f"Cherry-picked from Ascend/pytorch!{NUMBER}.", author="someone")
    server.permissions["someone"] = "write"  # a maintainer of the upstream
    first = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json")
    assert first.code == 0, first.err
    assert server.counts()["GET /repos/Ascend/pytorch/collaborators/someone/permission"] == 1
    ours = _ours(server)
    assert sorted(ours) == ["v2.12.0", "v2.7.1"]
    proposed = _branches(first)["v2.11.0"]
    assert proposed["status"] == "already-proposed"
    assert (proposed["proposed"]["number"], proposed["proposed"]["kind"]) == (handmade.number, "sync")

    # Our own PRs name !N in their bodies (合入来源, SOURCE=): they are refreshed, never a block.
    again = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--force", "--json")
    assert again.code == 0, again.err
    assert _ours(server) == ours
    assert {t: b["status"] for t, b in _branches(again).items()} == {
        "v2.7.1": "done", "v2.11.0": "already-proposed", "v2.12.0": "done"}

    server.prs[handmade.number].state = "closed"  # closed unmerged: the branch is free again
    third = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json")
    assert third.code == 0, third.err
    assert sorted(_ours(server)) == sorted(OTHERS)
    assert _branches(third)["v2.11.0"]["proposed"] is None


def test_a_merged_cherry_pick_on_the_local_forge_blocks_too(sandbox: Sandbox):
    project = load_project(sandbox.config, None, {})
    forge = LocalForge(project.state_dir / "forge.sqlite", upstream=project.branch_map.upstream,
                       fork=project.branch_map.fork)
    files = tuple(PrFile(old, new) for old, new in put_metric_files())
    number = forge.add_source_pr(head=SOURCE_HEAD, base="master", title="test: put_metric",
                                 body=BODY, author="lgxxx", issues=(3216,), files=files)
    land_merged_pr(sandbox, number, PATCHES)
    picked = forge.add_source_pr(head=f"cherry-pick-mr-{number}-1733000000-auto",
                                 base="v2.11.0", title="test: put_metric", body="copied",
                                 author="someone", state="merged")
    result = run_app(sandbox.project, "apply", "--from-pr", str(number), "--skip-tests", "--json",
                     env={"BACKPORT_CACHE": str(sandbox.cache)})
    assert result.code == 0, result.err
    branches = _branches(result)
    assert branches["v2.11.0"]["status"] == "already-proposed"
    assert branches["v2.11.0"]["proposed"]["number"] == picked
    assert branches["v2.11.0"]["proposed"]["url"] == f"local://Ascend/pytorch/pull/{picked}"
    assert {branches[t]["status"] for t in ("v2.7.1", "v2.12.0")} == {"done"}
    assert sorted(p.base for p in forge.list_prs("open")) == ["v2.12.0", "v2.7.1"]


def test_a_branch_found_proposed_keeps_its_commit_for_a_run_after_that_pr_is_closed(
        sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    pushed = run(sandbox, "apply", "--from-pr", str(NUMBER), "--branch", "v2.7.1",
                 "--skip-tests", "--no-pr", "--json")
    assert pushed.code == 0, pushed.err
    commit = _branches(pushed)["v2.7.1"]["commit"]
    sync = server.add_pr(head_repo="Ascend/pytorch", head=f"sync-pr{NUMBER}-x-to-v2.7.1",
                         base="v2.7.1", title="sync", author="ascend-robot")
    blocked = run(sandbox, "apply", "--from-pr", str(NUMBER), "--branch", "v2.7.1",
                  "--skip-tests", "--json")
    assert blocked.code == 0, blocked.err
    record = _branches(blocked)["v2.7.1"]
    assert (record["status"], record["commit"]) == ("already-proposed", commit)
    assert record["proposed"]["number"] == sync.number and _ours(server) == {}

    server.prs[sync.number].state = "closed"
    freed = run(sandbox, "apply", "--from-pr", str(NUMBER), "--branch", "v2.7.1", "--skip-tests")
    assert freed.code == 0, freed.err
    assert f"kept {commit[:9]} from the previous run" in freed.out + freed.err  # not redone
    record = _branches(run(sandbox, "status", "--api", f"pr-{NUMBER}", "--json"))["v2.7.1"]
    assert (record["status"], record["commit"]) == ("done", commit)
    assert list(_ours(server)) == ["v2.7.1"]


def test_a_dry_run_reads_the_prs_and_plans_no_pr_for_a_proposed_branch(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    server.add_pr(head_repo="Ascend/pytorch", head=f"cherry-pick-mr-{NUMBER}-1733000000-auto",
                  base="v2.7.1", title="test: add put_metric coverage", state="open")
    planned = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--dry-run")
    assert planned.code == 0, planned.err
    said = planned.out + planned.err
    assert "base=v2.12.0" in said and "base=v2.11.0" in said
    assert "base=v2.7.1" not in said
    assert not server.writes()
