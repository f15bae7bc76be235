"""`carries`: which PR already carries source PR !N into a target (the sync bot's, GitCode's
cherry-pick, a backport), and the near misses (a body naming it among them) that must not count; the
already-proposed record and its JSON."""

from __future__ import annotations

import pytest

from backport.codec import decode, encode
from backport.forge import PullRequest
from backport.pipeline.proposed import BACKPORT, CHERRY_PICK, SYNC, carries
from backport.records import BranchRecord, ProposedPr
from backport.states import Status, may_move

N, UP, TARGET = 42810, "Ascend/pytorch", "v2.7.1"


def pr(*, title: str = "fix something", head: str = "topic", body: str = "", base: str = TARGET,
       state: str = "open") -> PullRequest:
    return PullRequest(number=50000, url="https://gitcode.com/Ascend/pytorch/pull/50000",
                       title=title, body=body, head=head, head_repo="someone/pytorch",
                       base=base, state=state)


@pytest.mark.parametrize(("made", "kind"), [
    (pr(title=f"[sync] PR-{N}: test: add put_metric coverage"), SYNC),
    (pr(title=f"[Sync]PR-{N}"), SYNC),
    (pr(head=f"sync-pr{N}-test-put-metric-master-to-{TARGET}"), SYNC),
    (pr(head=f"sync-pr{N}-{TARGET}"), SYNC),  # the short form (Ascend's !36752: sync-pr36613-master)
    (pr(head=f"cherry-pick-mr-{N}-1733000000-auto", state="merged"), CHERRY_PICK),
    (pr(body=f"```text\nSOURCE=Ascend/pytorch!{N}@{'a' * 40}\n```"), BACKPORT),
    (pr(body=f"```text\nSOURCE=ascend/PyTorch!{N}@{'a' * 40}\n```"), BACKPORT),
])
def test_each_form_that_carries_the_source(made: PullRequest, kind: str) -> None:
    assert carries(made, N, UP, TARGET) == kind


@pytest.mark.parametrize("made", [
    pr(title=f"[sync] PR-{N}0: another change"),  # a longer number
    pr(title=f"[sync] PR-{N // 10}: a shorter one"),
    pr(title=f"PR-{N} mentioned without the bot's prefix"),
    pr(title=f"[sync] Ascend/op-plugin PR-{N}: another repository's PR"),
    pr(head=f"sync-op-plugin-pr{N}-x-to-{TARGET}"),
    pr(head=f"sync-pr{N}0-topic-to-{TARGET}"),
    pr(head=f"sync-pr{N}-topic-to-v2.7.10"),  # another target's sync branch
    pr(head=f"sync-pr{N}-to-{TARGET}"),  # no head branch between
    pr(head=f"sync-pr{N}-{TARGET}0"),  # the short form of another target
    pr(head=f"cherry-pick-mr-{N}0-1733000000-auto"),
    pr(head=f"cherry-pick-mr-{N}-auto"),
    pr(body=f"see !{N}"),  # a mention in prose carries nothing (issue 47 item 6)
    pr(body=f"!{N}"),
    pr(body=f"合入来源：[Ascend/pytorch!{N}](https://gitcode.com/x)"),
    pr(body=f"from ascend/PyTorch!{N}."),
    pr(body=f"(!{N})"),
    pr(body=f"SOURCE=Ascend/pytorch!{N}0@{'a' * 40}"),
    pr(body=f"SOURCE=Ascend/op-plugin!{N}@{'a' * 40}"),
    pr(body=f"!{N}0"),
    pr(body=f"!{N // 10}"),
    pr(body=f"Ascend/op-plugin!{N}"),  # another repository's PR of that number
    pr(body=f"Ascend/op-plugin-PR-{N}"),
    pr(body=f"pytorch!{N}"),  # part of a word, not a reference
    pr(body=f"https://gitcode.com/Ascend/pytorch!{N}"),
    pr(body=f"#{N}"),  # an issue
    pr(title=f"[sync] PR-{N}: right source", base="v2.11.0"),  # another target
    pr(title=f"[sync] PR-{N}: closed unmerged", state="closed"),
])
def test_near_misses_do_not_carry_it(made: PullRequest) -> None:
    assert carries(made, N, UP, TARGET) is None


def test_the_record_says_which_pr_carries_it_and_reads_back() -> None:
    found = ProposedPr(number=7, url="https://gitcode.com/Ascend/pytorch/pull/7",
                       state="merged", kind=CHERRY_PICK, title="t")
    rec = BranchRecord(target=TARGET, fork_branch="fb", status=Status.TESTED, commit="c" * 40,
                       conflicts=("a.py",))
    after = rec.already_proposed(found, "PR !7 already carries it")
    assert after.status == Status.ALREADY_PROPOSED and after.status.ok
    assert not after.status.final  # a re-run looks again: that PR may be closed by then
    # the commit stays (a hand resolution too), for a run after that PR is closed
    assert (after.proposed, after.commit, after.test, after.conflicts) == (found, "c" * 40, None, ())
    assert decode(BranchRecord, encode(after)) == after
    assert decode(BranchRecord, {"target": TARGET, "fork_branch": "f", "status": "done"}).proposed is None
    assert after.reset_apply().proposed is None  # a later apply outcome replaces it
    assert may_move(Status.DONE, Status.ALREADY_PROPOSED)
    assert may_move(Status.ALREADY_PROPOSED, Status.APPLIED)
    assert may_move(Status.ALREADY_PROPOSED, Status.TESTED)  # its kept commit, tested again
