"""GitCode round three (issue 29): each case against the stand-in on 127.0.0.1 switched to one
reading of the service the documentation allows, where a plausible reply once harmed a PR."""

from __future__ import annotations

import pytest

from backport.errors import BackportError
from backport.forge.gitcode import GitCodeForge
from tests.fakes.forge import BASE, BRANCH, FORK, UPSTREAM, make_gitcode
from tests.fakes.gitcode import FakeGitCode

pytestmark = pytest.mark.usefixtures("no_token_leak")

ISSUE = 3216


def creates(server: FakeGitCode) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path.endswith("/pulls")]


def closes(server: FakeGitCode) -> list:
    return [r for r in server.requests if r.method == "PATCH" and isinstance(r.body, dict)
            and r.body.get("state") == "closed"]


# ---------------------------------------------------------------- 1: draft read back
def test_draft_survives_an_update_where_the_service_derives_it_from_the_title(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.draft_by_title = True  # ``draft`` ignored on PATCH, the [WIP] prefix decides
    pr = gitcode.create_pr(BRANCH, BASE, "test: add it", "failing", draft=True)
    assert gitcode.find_open_pr(BRANCH, BASE).draft  # the listing knows it as a draft
    updated = gitcode.update_pr(pr.number, title="test: add it", body="still failing", draft=True)
    assert (server.prs[pr.number].draft, server.prs[pr.number].title) == (
        True, "[WIP] test: add it")
    assert (updated.draft, updated.title, updated.not_taken) == (True, "test: add it", ())


def test_a_draft_cleared_where_the_service_derives_it_from_the_title(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.draft_by_title = True
    pr = gitcode.create_pr(BRANCH, BASE, "test: add it", "failing", draft=True)
    updated = gitcode.update_pr(pr.number, title="test: add it", body="passing", draft=False)
    assert (server.prs[pr.number].draft, server.prs[pr.number].title) == (False, "test: add it")
    assert (updated.draft, updated.not_taken) == (False, ())


# ---------------------------------------------------------------- 4: listings
@pytest.mark.parametrize("page_body", [None, "<html><body>系统维护中</body></html>"],
                         ids=["error-object", "html"])
def test_a_listing_page_that_is_not_a_list_is_an_error_not_the_end(
        server: FakeGitCode, gitcode: GitCodeForge, page_body: str | None) -> None:
    for i in range(150):
        server.add_pr(head_repo="someone/pytorch", head=f"b{i}", base=BASE)
    server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    server.bad_page, server.bad_page_body = 2, page_body
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    message = info.value.message
    assert f"GET {server.url}/repos/Ascend/pytorch/pulls page 2 answered" in message
    assert "instead of a list" in message and message.count(". ") == 0
    assert creates(server) == []


def test_a_listing_whose_order_shifts_between_pages_still_finds_the_pr(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.unstable_order = True  # unless sort=created&direction=asc is asked
    server.refuse_duplicates = False  # the unkind reading: a second create opens a second PR
    for i in range(50):
        server.add_pr(head_repo="someone/pytorch", head=f"a{i}", base=BASE)
    ours = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    for i in range(100):  # newest first, ours would sit right at the page boundary
        server.add_pr(head_repo="someone/pytorch", head=f"b{i}", base=BASE)
    assert gitcode.create_pr(BRANCH, BASE, "t", "b").number == ours.number
    assert creates(server) == [] and len(server.open_prs(head=BRANCH)) == 1


def test_a_locked_pr_is_not_closed_and_gets_no_second(server: FakeGitCode,
                                                       gitcode: GitCodeForge) -> None:
    locked = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE, state="locked")
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert (pr.number, pr.state) == (locked.number, "open")
    assert creates(server) == []


def test_the_listing_is_read_afresh_right_before_a_create(server: FakeGitCode,
                                                          gitcode: GitCodeForge) -> None:
    server.refuse_duplicates = False
    assert gitcode.find_open_pr(BRANCH, BASE) is None  # the listing is kept from here
    other_run = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)  # e.g. another host
    assert gitcode.create_pr(BRANCH, BASE, "t", "b").number == other_run.number
    assert creates(server) == [] and len(server.open_prs()) == 1


# ---------------------------------------------------------------- 3: the read-back after create
def test_the_number_is_handed_over_before_a_lagging_read_back(server: FakeGitCode,
                                                              gitcode: GitCodeForge) -> None:
    server.read_lag = 1  # replication lag: the first read of the new PR answers 404
    numbers: list[int] = []
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b", on_number=numbers.append)
    assert numbers == [pr.number] and (pr.head_repo, pr.head) == (FORK, BRANCH)
    assert len(creates(server)) == 1 and closes(server) == []


def test_a_5xx_burst_on_the_read_back_is_waited_out(server: FakeGitCode,
                                                    gitcode: GitCodeForge) -> None:
    server.burst("GET", r"/pulls/\d+$", 7)  # more than one read's retries
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert pr.head == BRANCH and len(creates(server)) == 1


def test_a_pr_never_shown_is_left_unverified_with_its_number(server: FakeGitCode,
                                                             gitcode: GitCodeForge) -> None:
    server.read_lag = 100
    numbers: list[int] = []
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b", on_number=numbers.append)
    (number,) = numbers
    assert info.value.details == {"number": number, "unverified": True,
                                  "url": f"https://gitcode.com/{UPSTREAM}/pull/{number}"}
    assert "judged on the next run" in info.value.message and info.value.message.count(". ") == 0
    assert server.prs[number].state == "open" and len(creates(server)) == 1
    server.read_lag, server._unreadable = 0, {}
    judged = gitcode.verify_pr(number, BRANCH, BASE)
    assert (judged.number, judged.head_repo, judged.head) == (number, FORK, BRANCH)


# ---------------------------------------------------------------- 6: the issue link
def test_a_5xx_burst_on_the_issue_link_is_tried_again(server: FakeGitCode,
                                                      gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    server.burst("POST", r"/pulls/\d+/issues$", 3)
    gitcode.link_issues(pr.number, [ISSUE])
    assert server.prs[pr.number].issues == [ISSUE]


@pytest.mark.parametrize("status", [403, 404])
def test_a_refused_issue_link_is_a_refusal(server: FakeGitCode, gitcode: GitCodeForge,
                                           status: int) -> None:
    from backport.forge.base import is_refusal
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    server.burst("POST", r"/pulls/\d+/issues$", 1, status=status)
    with pytest.raises(BackportError) as info:
        gitcode.link_issues(pr.number, [ISSUE])
    assert is_refusal(info.value)
    assert len([r for r in server.requests if r.path.endswith("/issues")]) == 1


# ---------------------------------------------------------------- 7: create flags read back
def test_create_flags_ignored_as_json_booleans_are_set_through_an_update(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.create_ignores_booleans = True
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b", draft=True, close_related_issue=False)
    made = server.prs[pr.number]
    assert (made.draft, made.close_related_issue) == (True, False)
    assert (pr.draft, pr.head_repo, pr.head, pr.not_taken) == (True, FORK, BRANCH, ())
    gitcode.link_issues(pr.number, [ISSUE])
    assert server.merge(pr.number) == set() and ISSUE not in server.closed_issues


# ---------------------------------------------------------------- 9: closing on full evidence
def test_a_pr_whose_head_branch_is_not_shown_is_kept(server: FakeGitCode,
                                                     gitcode: GitCodeForge) -> None:
    server.omit_head = {"ref"}
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert (pr.head, pr.head_repo) == (BRANCH, FORK)
    assert closes(server) == [] and server.prs[pr.number].state == "open"


@pytest.mark.parametrize("switch, reason", [
    ({"wrong_base": "master"}, f"its base is master, not {BASE}"),
    ({"author": "someone"}, "its author is someone, not lgxxx"),
], ids=["other-base", "other-author"])
def test_a_wrong_head_is_not_closed_when_base_or_author_is_not_ours(
        server: FakeGitCode, gitcode: GitCodeForge, switch: dict, reason: str) -> None:
    server.head_forms = set()  # the head resolves to the upstream branch of that name
    for key, value in switch.items():
        setattr(server, key, value)
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert closes(server) == [] and len(server.open_prs()) == 1
    assert reason in info.value.message and "left it open" in info.value.message
    assert info.value.details["closed"] is False


def test_the_issue_state_is_read_from_the_service_once_per_run(
        server: FakeGitCode, gitcode: GitCodeForge, sleeps) -> None:
    server.closed_issues.add(ISSUE)
    assert gitcode.issue_state(ISSUE) == "closed"
    assert gitcode.issue_state(ISSUE) == "closed"  # every branch of the set asks
    assert server.counts()["GET /repos/Ascend/pytorch/issues/{n}"] == 1
    server.closed_issues.clear()
    assert make_gitcode(server, sleeps).issue_state(ISSUE) == "open"  # the next run reads it
