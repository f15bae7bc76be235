"""GitCode as it really behaves: each case against the strict stand-in on 127.0.0.1.

Where each behaviour is documented is listed in ``docs/gitcode.md``.
"""

from __future__ import annotations

import pytest
import requests

from backport.errors import BackportError
from backport.forge.gitcode import GitCodeForge
from backport.forge.http import ApiClient, RateLimiter
from tests.fakes.forge import BASE, BRANCH, FORK, TOKEN, UPSTREAM, SleepLog, make_gitcode
from tests.fakes.gitcode import FakeGitCode, Fault, synthetic_sha

pytestmark = pytest.mark.usefixtures("no_token_leak")

CREATE = r"^/repos/Ascend/pytorch/pulls$"


def creates(server: FakeGitCode) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path.endswith("/pulls")]


def raw(server: FakeGitCode, method: str, path: str, **kwargs) -> requests.Response:
    return requests.request(method, server.url + path, headers={"PRIVATE-TOKEN": TOKEN},
                            timeout=5, **kwargs)


# ---------------------------------------------------------------- 10: the stand-in's shapes
def test_stand_in_answers_in_the_documented_shapes(server: FakeGitCode) -> None:
    created = raw(server, "POST", "/repos/Ascend/pytorch/pulls",
                  json={"title": "t", "head": f"{FORK}:{BRANCH}", "base": BASE})
    assert created.status_code == 201
    data = created.json()
    assert "iid" not in data and "head" not in data and data["html_url"] and data["number"] == 1
    single = raw(server, "GET", "/repos/Ascend/pytorch/pulls/1").json()
    repo = single["head"]["repo"]
    assert "full_path" not in repo
    assert (repo["full_name"], repo["namespace"]["path"], repo["path"]) == (FORK, "lgxxx", "pytorch")
    assert single["head"]["sha"] == synthetic_sha(FORK, BRANCH)
    listed = raw(server, "GET", "/repos/Ascend/pytorch/pulls").json()
    assert listed[0]["head"]["repo"]["full_path"] == FORK
    server.prs[1].issues = list(range(1, 46))
    issues = raw(server, "GET", "/repos/Ascend/pytorch/pulls/1/issues").json()
    assert len(issues) == 20 and issues[0]["number"] == "1"  # paged, numbers as strings
    labels = raw(server, "POST", "/repos/Ascend/pytorch/pulls/1/labels", json=["backport"])
    assert labels.status_code == 403  # the fork owner is not a member of the upstream


def test_stand_in_resolves_legacy_heads_to_the_upstream_branch(server: FakeGitCode) -> None:
    # upstream has a branch named like the fork branch (conftest): the reported 0-commit PR
    answer = raw(server, "POST", "/repos/Ascend/pytorch/pulls",
                 json={"title": "t", "head": f"lgxxx:{BRANCH}", "fork_path": FORK, "base": BASE})
    assert answer.status_code == 201
    assert server.prs[answer.json()["number"]].head_repo == UPSTREAM
    missing = raw(server, "POST", "/repos/Ascend/pytorch/pulls",
                  json={"title": "t", "head": "lgxxx:other", "base": BASE})
    assert missing.status_code == 404


# ---------------------------------------------------------------- 1: no PR from the wrong source
def test_missing_fork_branch_opens_nothing_even_when_upstream_has_the_name(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.add_branch(UPSTREAM, "not-pushed")  # a legacy head form would resolve to this one
    with pytest.raises(BackportError) as info:
        gitcode.create_pr("not-pushed", BASE, "t", "b")
    assert info.value.message.startswith(
        f"The fork branch {FORK}:not-pushed does not exist on GitCode")
    # one create, refused (only owner/repo:branch is sent); the branch read says why
    assert [c.status for c in creates(server)] == [400] and server.prs == {}


def test_fork_branch_at_the_pushed_sha_opens_the_pr(server: FakeGitCode,
                                                    gitcode: GitCodeForge) -> None:
    sha = "a" * 40
    server.add_branch(FORK, BRANCH, sha)
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b", head_sha=sha)
    assert (pr.head_repo, pr.head) == (FORK, BRANCH)
    assert [p.head_sha for p in server.open_prs()] == [sha]


def test_pr_resolved_to_the_upstream_branch_is_closed_at_once(server: FakeGitCode,
                                                              gitcode: GitCodeForge) -> None:
    server.head_forms = set()  # the service mis-resolves even owner/repo:branch
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b", head_sha=synthetic_sha(FORK, BRANCH))
    (pr,) = server.prs.values()
    assert pr.state == "closed" and server.open_prs() == []
    message = info.value.message
    assert message.count(". ") == 0 and message.endswith("so no wrong PR stays open.")
    assert f"from the upstream branch {UPSTREAM}:{BRANCH}" in message
    assert any(r.method == "PATCH" and r.body.get("state") == "closed" for r in server.requests)


def test_refused_create_is_not_sent_in_another_form(server: FakeGitCode,
                                                       gitcode: GitCodeForge) -> None:
    server.add_fault("POST", CREATE, Fault(status=400, body={
        "error_message": "Can not find the branch: " + BRANCH}))
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert "answered 400: Can not find the branch" in info.value.message
    assert len(creates(server)) == 1 and server.prs == {}


# ---------------------------------------------------------------- 2: duplicates in Chinese
def test_duplicate_answered_in_chinese_returns_the_existing_pr(server: FakeGitCode,
                                                               gitcode: GitCodeForge) -> None:
    existing = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    server.add_fault("GET", r"/pulls$", Fault(status=200, body=[]))  # a stale first lookup
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert pr.number == existing.number
    assert len(creates(server)) == 1 and len(server.open_prs()) == 1


def test_refused_form_is_looked_up_before_the_next_form(server: FakeGitCode,
                                                        gitcode: GitCodeForge) -> None:
    # GitCode opened the PR but answered 403: the next form must not be tried.
    server.add_fault("POST", CREATE, Fault(status=403, after=True))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert len(creates(server)) == 1
    assert [p.number for p in server.open_prs()] == [pr.number]


# ---------------------------------------------------------------- 3: the shared issue stays open
def test_close_related_issue_false_is_sent_and_keeps_the_issue_open(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b", close_related_issue=False)
    gitcode.link_issues(pr.number, [3216])
    gitcode.update_pr(pr.number, title="t", body="b2", close_related_issue=False)
    (post,) = creates(server)
    patch = next(r for r in server.requests if r.method == "PATCH")
    assert post.body["close_related_issue"] is False and patch.body["close_related_issue"] is False
    assert server.merge(pr.number) == set() and 3216 not in server.closed_issues


def test_without_the_flag_a_merge_closes_the_shared_issue(server: FakeGitCode,
                                                          gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    gitcode.link_issues(pr.number, [3216])
    assert server.merge(pr.number) == {3216}  # why the pipeline always sends the flag


# ---------------------------------------------------------------- 4: drafts clear
def test_draft_clears_and_the_wip_prefix_is_not_part_of_the_title(server: FakeGitCode,
                                                                  gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "test: add it", "b", draft=True)
    assert server.prs[pr.number].title == "[WIP] test: add it"
    assert (pr.draft, pr.title) == (True, "test: add it")
    assert gitcode.find_open_pr(BRANCH, BASE).title == "test: add it"
    cleared = gitcode.update_pr(pr.number, title="test: add it", body="b", draft=False)
    assert (cleared.draft, cleared.title) == (False, "test: add it")
    assert server.prs[pr.number].draft is False


# ---------------------------------------------------------------- 5: the body is the PR's own
def test_found_pr_carries_the_whole_body_not_the_list_summary(server: FakeGitCode,
                                                              gitcode: GitCodeForge) -> None:
    body = "generated\n" + "x" * 500 + "\nReviewer note: keep me.\n"
    server.list_body_limit = 100
    server.add_pr(head_repo=FORK, head=BRANCH, base=BASE, body=body)
    assert gitcode.find_open_pr(BRANCH, BASE).body == body


# ---------------------------------------------------------------- 7: linked issues are paged
def test_linked_issues_are_read_past_the_first_page(server: FakeGitCode,
                                                    gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    server.prs[pr.number].issues = [*range(1, 131), 3216]
    assert 3216 in gitcode.linked_issues(pr.number)
    gitcode.link_issues(pr.number, [3216])
    assert not [r for r in server.requests if r.method == "POST" and r.path.endswith("/issues")]


# ---------------------------------------------------------------- 8: 429 without Retry-After
class FakeClock:
    """Time that passes only when the client sleeps; the stand-in reads the same clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_429_without_retry_after_waits_for_the_minute_window_with_progress() -> None:
    clock = FakeClock()
    notes: list[str] = []
    with FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK, per_minute=3,
                     clock=clock) as server:
        client = ApiClient(server.url, TOKEN, sleep=clock.sleep, limiter=RateLimiter(
            ((10_000, 60.0),), clock=clock, sleep=clock.sleep, notify=notes.append))
        forge = GitCodeForge(server.url, UPSTREAM, FORK, TOKEN, client=client, settle=0.0,
                             sleep=clock.sleep)
        for _ in range(4):  # the 4th request in the same minute answers 429, no Retry-After
            assert forge.list_prs("closed") == []
        assert [r.status for r in server.requests] == [200, 200, 200, 429, 200]
    assert sum(clock.sleeps) >= 60.0
    assert "waiting 60s for the per-minute window" in notes[0]
    assert any("s left" in note for note in notes[1:])


def test_429_back_off_is_not_a_sleep_in_tests(server: FakeGitCode, sleeps: SleepLog) -> None:
    forge = make_gitcode(server, sleeps)
    server.add_fault("GET", r"/pulls$", Fault(status=429))
    assert forge.list_prs("closed") == []
    assert sleeps.calls and sum(sleeps.calls) == 60.0
