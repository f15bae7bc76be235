"""The carrier rule: only the forms the sync bot, GitCode's cherry-pick or this tool write, where
they write them, carry a source PR; a mention in prose carries nothing, and no number of
thousands of digits breaks the rule (issue 47 item 6)."""

from __future__ import annotations

import pytest

from backport.forge import PullRequest
from backport.pipeline.proposed import BACKPORT, CHERRY_PICK, SYNC, carries, commit_carries

UP, TARGET, N = "Ascend/pytorch", "v2.12.0", 35503
SHA = "9e73e708ab9350d203475609f36f8a43f6a0c2ab"
HUGE = "9" * 5000
TRAILER = f"Backport of {UP}!{N}.\n(cherry picked from commit {SHA})"


def pr(*, title: str = "fix: x", head: str = "topic", body: str = "") -> PullRequest:
    return PullRequest(number=50000, url="", title=title, body=body, head=head,
                       head_repo="someone/pytorch", base=TARGET, state="open")


def squash(number: int, head: str, own: str, description: str = "") -> str:
    """GitCode's squash message of PR ``number`` whose commit message is ``own``."""
    title = own.split("\n", 1)[0]
    return (f"{own}\n\n# message auto-generated for no-merge-commit merge:\n!{number} merge "
            f"{head} into {TARGET}\n\n{title}\n\nCreated-by: someone\nMerged-by: ascend-robot\n"
            f"Description: {description}\n\nSee merge request: {UP}!{number}\n")


@pytest.mark.parametrize("body", [
    f"see also !{N}", f"参考 !{N}", f"!{N}", f"fixes the bug of {UP}!{N}",
    f"the text SOURCE={UP}!{N}@{SHA} in prose",
])
def test_a_mention_in_a_prs_description_carries_nothing(body: str) -> None:
    assert carries(pr(body=body), N, UP, TARGET) is None


def test_the_tools_source_line_in_a_pr_body_carries_it() -> None:
    body = f"evidence\n\n```text\nSOURCE={UP}!{N}@{SHA}\nTARGET_BRANCH={TARGET}\n```\n"
    assert carries(pr(body=body), N, UP, TARGET) == BACKPORT


@pytest.mark.parametrize("made", [
    pr(body="!" + HUGE), pr(title=f"[sync] PR-{HUGE}: x"), pr(head=f"sync-pr{HUGE}-x-to-{TARGET}"),
    pr(head=f"cherry-pick-mr-{HUGE}-1-auto"), pr(body=f"SOURCE={UP}!{HUGE}@{SHA}"),
])
def test_thousands_of_digits_are_no_number_and_raise_nothing(made: PullRequest) -> None:
    assert carries(made, N, UP, TARGET) is None
    assert carries(made, int("9" * 10), UP, TARGET) is None


def test_the_bots_forms_still_carry_it() -> None:
    assert carries(pr(title=f"[sync] PR-{N}: fix"), N, UP, TARGET) == SYNC
    assert carries(pr(head=f"sync-pr{N}-fix-to-{TARGET}"), N, UP, TARGET) == SYNC
    assert carries(pr(head=f"cherry-pick-mr-{N}-17-auto"), N, UP, TARGET) == CHERRY_PICK


@pytest.mark.parametrize("message", [
    squash(100, "docs/x", "docs: update the guide", f"see also !{N}"),
    squash(200, "release", f"Release 2.13.0\n\n参考 !{N}"),
    # a PR description quoted in the squash message, holding every carrier form
    squash(300, "fix/q", "fix: q", f"[sync] PR-{N}: t\nsync-pr{N}-a-to-{TARGET}\n\n{TRAILER}"),
    # the tool's trailer, but not as the last paragraph of the commit's own message
    squash(400, "fix/r", f"fix: r\n\n{TRAILER}\n\nmore words"),
    # another repository's PR of that number
    squash(500, "fix/s", f"fix: s\n\nBackport of Ascend/op-plugin!{N}.\n"
                         f"(cherry picked from commit {SHA})"),
    # the author's own text quoting a merge line with the PR's own number
    squash(600, "fix/t", f"fix: t\n\n!600 merge sync-pr{N}-a-to-{TARGET} into {TARGET}"),
    squash(700, "fix/u", "fix: u\n\n!" + HUGE, "PR-" + HUGE),
])
def test_a_mention_in_a_commit_carries_nothing(message: str) -> None:
    assert commit_carries(message, UP, TARGET) == set()


def test_a_commits_carriers_are_the_bots_and_the_tools_own_forms() -> None:
    assert commit_carries(squash(1, f"sync-pr{N}-fix-to-{TARGET}", "fix: a"), UP, TARGET) == {N}
    assert commit_carries(squash(2, f"cherry-pick-mr-{N}-17-auto", "fix: b"), UP, TARGET) == {N}
    assert commit_carries(squash(3, "topic", f"[sync] PR-{N}: fix c"), UP, TARGET) == {N}
    # this tool's backport, squash-merged: its trailer ends the commit's own message
    ours = squash(4, f"backport-pr-{N}-{TARGET}", f"fix: d\n\nthe author's words\n\n{TRAILER}")
    assert commit_carries(ours, UP, TARGET) == {N}
    assert commit_carries(f"fix: d\n\n{TRAILER}\n", UP.lower(), TARGET) == {N}  # not squashed
    # its own number is never one it carries
    assert commit_carries(squash(N, f"sync-pr{N}-x-to-{TARGET}", "fix: e"), UP, TARGET) == set()
