"""GitCode where its documentation is silent: stale reads, lost replies, ignored fields, pacing.

Each test runs against the stand-in on 127.0.0.1 switched to one undocumented behaviour the
client must survive without harming a PR.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from backport.errors import BackportError
from backport.forge.gitcode import GitCodeForge
from backport.forge.http import ApiClient, RateLimiter
from backport.forge.pace import parse_windows
from tests.fakes.forge import BASE, BRANCH, FORK, TOKEN, UPSTREAM, SleepLog, make_gitcode
from tests.fakes.gitcode import FakeGitCode, Fault, synthetic_sha

CREATE = r"/pulls$"


def creates(server: FakeGitCode):
    return [r for r in server.requests if r.method == "POST" and r.path.endswith("/pulls")]


def closes(server: FakeGitCode):
    return [r for r in server.requests if r.method == "PATCH" and isinstance(r.body, dict)
            and r.body.get("state") == "closed"]


# ---------------------------------------------------------------- 1: a lagging read harms nothing
@pytest.mark.parametrize("lag", [1, 5])
def test_pr_whose_head_sha_lags_at_first_read_stays_open(server: FakeGitCode,
                                                         gitcode: GitCodeForge, lag: int) -> None:
    # The reference's own example shows head.sha == base.sha right after creation.
    server.head_sha_lag = lag
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b", head_sha=synthetic_sha(FORK, BRANCH))
    assert (pr.head, pr.head_repo, pr.state) == (BRANCH, FORK, "open")
    assert [p.number for p in server.open_prs()] == [pr.number]
    assert closes(server) == []


def test_a_wrong_head_at_first_read_is_read_again_before_judging(server: FakeGitCode,
                                                                  gitcode: GitCodeForge) -> None:
    server.add_fault("GET", r"/pulls/1$", Fault(status=200, body={
        "number": 1, "state": "open", "title": "t", "body": "b",
        "head": {"ref": BRANCH, "repo": {"full_name": UPSTREAM}},
        "base": {"ref": BASE, "repo": {"full_name": UPSTREAM}}}))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert (pr.number, pr.head_repo) == (1, FORK)
    assert closes(server) == [] and len(server.open_prs()) == 1


def test_a_wrong_head_is_closed_once_per_branch_then_left_with_one_sentence(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.head_forms = set()  # every create resolves to the upstream branch of the same name
    with pytest.raises(BackportError) as first:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert first.value.details["closed"] is True
    with pytest.raises(BackportError) as second:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    message = second.value.message
    assert len(closes(server)) == 1 and len(server.open_prs()) == 1
    assert second.value.details == {"number": 2, "url": second.value.details["url"],
                                    "closed": False}
    assert "closes such a PR only once per branch" in message and message.count(". ") == 0


# ---------------------------------------------------------------- 3: one head form only
def test_only_the_owner_repo_head_form_is_ever_sent(server: FakeGitCode,
                                                    gitcode: GitCodeForge) -> None:
    server.add_fault("POST", CREATE, Fault(status=404, body={"error_message": "Not Found"}))
    with pytest.raises(BackportError):
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert [p.body["head"] for p in creates(server)] == [f"{FORK}:{BRANCH}"]
    assert all("fork_path" not in p.body for p in creates(server))


# ---------------------------------------------------------------- 4: no duplicate on a lost reply
@pytest.mark.parametrize("fault", [Fault(drop=True, after=True), Fault(status=502, after=True)],
                         ids=["reply-lost", "5xx-after-create"])
def test_a_lost_create_reply_yields_one_pr(server: FakeGitCode, gitcode: GitCodeForge,
                                           fault: Fault) -> None:
    # The service does not refuse a second create, and lists a new PR only after two reads.
    server.refuse_duplicates = False
    server.list_lag = 2
    server.add_fault("POST", CREATE, fault)
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert len(server.prs) == 1 and [p.number for p in server.open_prs()] == [pr.number]
    assert len(creates(server)) == 1


def test_a_service_that_ignores_per_page_still_finds_the_open_pr(server: FakeGitCode,
                                                                 gitcode: GitCodeForge) -> None:
    server.honour_per_page = False  # pages of 20 whatever is asked
    ours = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    for i in range(30):  # newer PRs first: ours is on the second page of 20
        server.add_pr(head_repo="someone/pytorch", head=f"b{i}", base=BASE)
    found = gitcode.find_open_pr(BRANCH, BASE)
    assert found is not None and found.number == ours.number
    assert gitcode.create_pr(BRANCH, BASE, "t", "b").number == ours.number
    assert creates(server) == []


def test_a_duplicate_refused_in_chinese_is_looked_up_with_settle_waits(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    # The listing lags behind: the PR shows only on the third read. Only the "已存在" wording
    # says the refusal is a duplicate worth waiting for.
    existing = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    assert "已存在" in server.duplicate_message
    server.duplicate_message = "合并请求已存在"
    server.add_fault("GET", CREATE, Fault(status=200, body=[]), Fault(status=200, body=[]))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert pr.number == existing.number and len(server.prs) == 1


def test_a_duplicate_never_listed_stops_with_one_sentence(server: FakeGitCode,
                                                          gitcode: GitCodeForge) -> None:
    server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    server.add_fault("GET", CREATE, *[Fault(status=200, body=[]) for _ in range(10)])
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert "already exists" in info.value.message and info.value.message.count(". ") == 0
    assert len(creates(server)) == 1 and len(server.prs) == 1


# ---------------------------------------------------------------- 5: writes are verified
def test_json_patch_fields_ignored_are_sent_again_as_a_form(server: FakeGitCode,
                                                            gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "t", "failing result", draft=True)
    server.json_patch_ignores = {"body", "draft"}
    updated = gitcode.update_pr(pr.number, title="t", body="passing result", draft=False)
    assert (server.prs[pr.number].body, server.prs[pr.number].draft) == ("passing result", False)
    assert (updated.body, updated.draft, updated.not_taken) == ("passing result", False, ())
    patches = [r for r in server.requests if r.method == "PATCH"]
    assert len(patches) == 2 and patches[1].body == {"title": "t", "body": "passing result",
                                                     "draft": "false"}


def test_a_field_never_taken_is_named(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    server.json_patch_ignores = server.form_patch_ignores = {"close_related_issue"}
    updated = gitcode.update_pr(pr.number, title="t", body="b2", close_related_issue=False)
    assert updated.not_taken == ("close_related_issue",) and updated.body == "b2"


def test_an_update_the_answer_confirms_costs_one_write_and_the_draft_read(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b", draft=True)
    before = len(server.requests)
    updated = gitcode.update_pr(pr.number, title="t", body="b2", draft=True)
    # the answer shows title and body but not draft, which a title may have changed: read
    assert [r.method for r in server.requests[before:]] == ["PATCH", "GET"]
    assert (updated.body, updated.draft, updated.not_taken) == ("b2", True, ())


# ---------------------------------------------------------------- 8: the budget of one set
def test_four_prs_of_one_set_are_each_listed_afresh_before_create(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    branches = {f"test-put-metric-{b}": b for b in ("v2.7.1", "v2.11.0", "v2.12.0", "master")}
    for head, base in branches.items():
        server.add_branch(FORK, head)
        server.add_branch(UPSTREAM, base)
    for head, base in branches.items():
        assert gitcode.find_open_pr(head, base) is None
        pr = gitcode.create_pr(head, base, "t", "b")
        gitcode.link_issues(pr.number, [3216])
    listed = [r for r in server.requests if r.method == "GET" and r.path.endswith("/pulls")]
    # open PRs, then locked ones (a page shorter than 20 is the last): once for the finds
    # (kept); afresh before each create the open ones into its base (another run may have
    # opened the PR meanwhile; one locked since was in the kept listing)
    assert len(listed) == 2 + 4
    assert [r.query.get("base") for r in listed[2:]] == list(branches.values())
    assert all(r.query["state"] == "open" for r in listed[2:])
    assert [p.number for p in gitcode.list_prs()] == sorted(p.number for p in server.open_prs())
    assert len(server.requests) == len(listed) + 4 * 3  # per PR: create, read back, link
    assert server.counts()["GET /repos/Ascend/pytorch/pulls/{n}"] == 4


# ---------------------------------------------------------------- 8: pacing before any 429
def test_requests_are_paced_under_the_limit_and_never_meet_429() -> None:
    # A scaled-down minute: 8 requests per 0.4 s on both sides, many threads at once.
    with FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK, per_minute=8,
                     rate_window=0.4) as server:
        notes: list[str] = []
        client = ApiClient(server.url, TOKEN, limiter=RateLimiter(
            parse_windows("8/0.4"), notify=notes.append, notify_over=0.0))
        forge = GitCodeForge(server.url, UPSTREAM, FORK, TOKEN, client=client, settle=0.0)
        threads = [threading.Thread(target=lambda: [forge.list_prs("closed") for _ in range(5)])
                   for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(server.requests) == 20 and server.rate_limited == 0
    assert notes and "requests in the last 0.4 s; the limit is 8 per 0.4 s" in notes[0]
    assert notes[0].startswith("GitCode API: waiting ")






# ---------------------------------------------------------------- 9: no route to the service
UNRESOLVABLE = "api.backport-test.invalid"


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: bound, then closed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def name_unresolvable(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """This process's resolver fails for UNRESOLVABLE as the host's would at its worst or best
    (no such name / resolver unreachable); other names resolve as usual."""
    real = socket.getaddrinfo
    errno_, text = request.param

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host == UNRESOLVABLE:
            raise socket.gaierror(errno_, text)
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def assert_unreachable_in_one_sentence(url: str, why: str, sleeps: SleepLog) -> None:
    forge = GitCodeForge(url, UPSTREAM, FORK, TOKEN, sleep=sleeps)
    started = time.monotonic()
    with pytest.raises(BackportError) as info:
        forge.preflight()
    host = url.split("/")[2]
    assert info.value.message == (
        f"GitCode API at {host} could not be reached ({why}); check the network connection, any "
        "proxy (HTTPS_PROXY) and api_url in branches.yaml.")
    assert sleeps.calls == []  # not retried: nothing to wait for
    assert time.monotonic() - started < 30


def test_refused_connection_is_one_sentence_naming_the_host_and_what_to_check(
        sleeps: SleepLog, closed_port: int) -> None:
    assert_unreachable_in_one_sentence(f"http://127.0.0.1:{closed_port}/api/v5",
                                       "the connection was refused", sleeps)


@pytest.mark.parametrize("name_unresolvable", [
    (socket.EAI_NONAME, "Name or service not known"),
    (socket.EAI_AGAIN, "Temporary failure in name resolution"),
], indirect=True, ids=["no-such-name", "resolver-unreachable"])
def test_no_route_is_one_sentence_naming_the_host_and_what_to_check(
        sleeps: SleepLog, name_unresolvable: None) -> None:
    assert_unreachable_in_one_sentence(f"https://{UNRESOLVABLE}/api/v5",
                                       "its name does not resolve", sleeps)


def test_fixture_forge_is_unpaced(server: FakeGitCode, sleeps: SleepLog) -> None:
    # the conftest forge never waits, so these tests take no time
    forge = make_gitcode(server, sleeps)
    for _ in range(60):
        forge.list_prs("closed")
    assert sleeps.calls == []


