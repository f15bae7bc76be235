"""GitCode-specific behaviour against the fake server: faults, quirks, auth and secrecy."""

from __future__ import annotations

import os
import subprocess

import pytest

from backport.errors import BackportError
from backport.forge.gitcode import GitCodeForge
from tests.fakes.forge import BASE, BRANCH, FORK, TOKEN, UPSTREAM, SleepLog, make_gitcode
from tests.fakes.gitcode import FakeGitCode, Fault

pytestmark = pytest.mark.usefixtures("no_token_leak")

CREATE = r"^/repos/Ascend/pytorch/pulls$"


def creates(server: FakeGitCode) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path.endswith("/pulls")]


# ---------------------------------------------------------------- rate limits and 5xx
@pytest.mark.parametrize("headers, expected", [({"Retry-After": "0"}, 0.0),
                                               ({"Retry-After": "1"}, 1.0)])
def test_429_with_retry_after_is_honoured(server: FakeGitCode, gitcode: GitCodeForge,
                                          sleeps: SleepLog, headers, expected) -> None:
    server.add_fault("POST", CREATE, Fault(status=429, headers=headers,
                                           body={"message": "Too Many Requests"}))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert len(server.open_prs()) == 1 and pr.number == server.open_prs()[0].number
    assert len(creates(server)) == 2
    assert expected in sleeps.calls


def test_429_with_http_date_retry_after(server: FakeGitCode, gitcode: GitCodeForge,
                                        sleeps: SleepLog) -> None:
    server.add_fault("GET", r"/pulls$", Fault(status=429, headers={
        "Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}))  # in the past: retry at once
    assert gitcode.find_open_pr(BRANCH, BASE) is None
    assert 0.0 in sleeps.calls


def test_429_without_retry_after_waits_out_the_minute(server: FakeGitCode, gitcode: GitCodeForge,
                                                     sleeps: SleepLog) -> None:
    server.add_fault("GET", r"/pulls$", Fault(status=429), Fault(status=429))
    assert gitcode.list_prs() == []
    assert sum(sleeps.calls) == 120.0  # two whole per-minute windows, never a short back-off


def test_persistent_429_gives_up_with_a_clear_error(server: FakeGitCode,
                                                    gitcode: GitCodeForge) -> None:
    server.add_fault("GET", r"/pulls$", *[Fault(status=429, body={"message": "slow down"})] * 5)
    with pytest.raises(BackportError) as info:
        gitcode.list_prs()
    assert info.value.code == "forge"
    assert "answered 429: slow down" in info.value.message
    assert "/repos/Ascend/pytorch/pulls" in info.value.message


def test_502_on_get_is_retried(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.add_fault("GET", r"/pulls/\d+$", Fault(status=502), Fault(status=503))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert gitcode.get_pr(pr.number).number == pr.number


def test_502_before_create_still_one_pr(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.add_fault("POST", CREATE, Fault(status=502, body="Bad Gateway"))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert [p.number for p in server.open_prs()] == [pr.number]
    assert len(creates(server)) == 2  # failed one, then one more after the lookup found nothing


def test_502_after_server_created_does_not_duplicate(server: FakeGitCode,
                                                     gitcode: GitCodeForge) -> None:
    server.add_fault("POST", CREATE, Fault(status=502, after=True))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert [p.number for p in server.open_prs()] == [pr.number]
    assert len(creates(server)) == 1


def test_dropped_connection_after_create_finds_the_pr(server: FakeGitCode,
                                                      gitcode: GitCodeForge) -> None:
    server.add_fault("POST", CREATE, Fault(drop=True, after=True))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert [p.number for p in server.open_prs()] == [pr.number]
    assert len(creates(server)) == 1
    assert pr.head_repo == FORK


def test_dropped_connection_before_create_creates_once(server: FakeGitCode,
                                                       gitcode: GitCodeForge) -> None:
    server.add_fault("POST", CREATE, Fault(drop=True))
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert [p.number for p in server.open_prs()] == [pr.number]
    assert len(creates(server)) == 2


def test_stalled_create_is_found_not_repeated(server: FakeGitCode, sleeps: SleepLog) -> None:
    forge = make_gitcode(server, sleeps, timeout=0.4)
    server.add_fault("POST", CREATE, Fault(stall=1.2))
    pr = forge.create_pr(BRANCH, BASE, "t", "b")
    assert [p.number for p in server.open_prs()] == [pr.number]
    assert len(creates(server)) == 1


def test_post_that_keeps_failing_is_not_retried_blindly(server: FakeGitCode,
                                                        gitcode: GitCodeForge) -> None:
    server.add_fault("POST", CREATE, *[Fault(status=503)] * 5)
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert "answered 503" in info.value.message
    assert len(creates(server)) == 2  # one re-send after a lookup, never a loop
    assert server.open_prs() == []


def test_server_reports_duplicate_then_lookup_returns_existing(server: FakeGitCode,
                                                               gitcode: GitCodeForge) -> None:
    existing = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    server.add_fault("GET", r"/pulls$", Fault(status=200, body=[]))  # a stale first lookup
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert pr.number == existing.number
    assert len(server.open_prs()) == 1


# ---------------------------------------------------------------- head forms and verification
def test_first_head_form_is_owner_repo_branch(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    gitcode.create_pr(BRANCH, BASE, "t", "b")
    (post,) = creates(server)
    assert post.body["head"] == f"{FORK}:{BRANCH}" and "fork_path" not in post.body
    assert post.body["base"] == BASE and post.body["body"] == "b"


@pytest.mark.parametrize("wrong", ["404", "403"])
def test_no_fallback_head_form(server: FakeGitCode, gitcode: GitCodeForge, wrong) -> None:
    # A service that takes only the legacy form: the legacy form is never sent (it resolves to
    # the upstream branch or answers 403 as reported), so no PR; one sentence says why.
    server.head_forms = {"fork_path"}
    server.wrong_form = wrong
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert f"answered {wrong}" in info.value.message and server.prs == {}
    assert all(p.body["head"] == f"{FORK}:{BRANCH}" and "fork_path" not in p.body
               for p in creates(server))


def test_missing_fork_branch_fails_naming_the_branch(server: FakeGitCode,
                                                     gitcode: GitCodeForge) -> None:
    with pytest.raises(BackportError) as info:
        gitcode.create_pr("test-not-pushed", BASE, "t", "b")
    assert info.value.code == "forge"
    assert "test-not-pushed" in info.value.message
    assert server.prs == {}


def test_pr_opened_from_upstream_is_reported_not_retried(server: FakeGitCode,
                                                         gitcode: GitCodeForge) -> None:
    server.head_forms = set()
    server.wrong_form = "upstream"  # the worst real behaviour: PR from upstream's branch
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert f"from the upstream branch {UPSTREAM}:{BRANCH}" in info.value.message
    assert f"!{next(iter(server.prs))}" in info.value.message
    assert "closed it at once" in info.value.message
    assert len(creates(server)) == 1 and server.open_prs() == []


def test_create_response_shape_is_not_trusted(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "My title", "the body")
    # the create answer has no head/base and no iid; the re-GET fills them in
    assert pr.url == f"https://gitcode.com/{UPSTREAM}/pull/{pr.number}"
    assert (pr.title, pr.body, pr.head, pr.head_repo) == ("My title", "the body", BRANCH, FORK)
    assert any(r.method == "GET" and r.path.endswith(f"/pulls/{pr.number}") for r in server.requests)


def test_find_pages_through_everything_and_ignores_filters(server: FakeGitCode,
                                                           gitcode: GitCodeForge) -> None:
    ours = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)
    for i in range(230):
        server.add_pr(head_repo="someone/pytorch", head=f"b{i}", base=BASE)
    for _ in range(5):
        server.add_pr(head_repo="x/pytorch", head=BRANCH, base=BASE)  # same branch, other fork
    server.add_pr(head_repo=FORK, head=BRANCH, base="master")  # same branch, other base
    found = gitcode.find_open_pr(BRANCH, BASE)
    assert found is not None and found.number == ours.number
    pages = [r for r in server.requests if r.path.endswith("/pulls") and r.method == "GET"]
    # one listing of every open PR (any base), read until an empty page, then the locked ones
    assert [(r.query["state"], r.query["page"]) for r in pages] == [
        ("open", "1"), ("open", "2"), ("open", "3"), ("open", "4"), ("locked", "1")]
    assert all("base" not in r.query and r.query.get("per_page") == "100" for r in pages)
    assert all((r.query["sort"], r.query["direction"]) == ("created", "asc") for r in pages)


def test_find_stops_on_a_repeated_page(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    page = [{"id": i, "number": i, "state": "open", "head": {"ref": f"b{i}"},
             "base": {"ref": BASE}} for i in range(100)]
    server.add_fault("GET", r"/pulls$", Fault(status=200, body=page), Fault(status=200, body=page))
    assert gitcode.find_open_pr(BRANCH, BASE) is None
    assert len([r for r in server.requests if r.path.endswith("/pulls")
                and r.query["state"] == "open"]) == 2


def test_state_mapping_and_string_issue_numbers(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE)  # opened in an earlier run
    server.prs[pr.number].issues = [3216, 7]
    assert gitcode.linked_issues(pr.number) == [3216, 7]
    gitcode.link_issues(pr.number, [3216])
    assert not [r for r in server.requests if r.method == "POST" and r.path.endswith("/issues")]
    server.prs[pr.number].state = "merged"
    assert gitcode.get_pr(pr.number).state == "merged"
    server.prs[pr.number].state = "closed"
    server.prs[pr.number].merged_at = "2026-01-01T00:00:00+08:00"
    assert gitcode.get_pr(pr.number).state == "merged"


def test_link_issue_posts_an_array_of_ints(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    gitcode.link_issues(pr.number, [3216])
    (post,) = [r for r in server.requests if r.method == "POST" and r.path.endswith("/issues")]
    assert post.body == [3216]


def test_update_sends_title_and_body_together(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = gitcode.create_pr(BRANCH, BASE, "t", "b")
    updated = gitcode.update_pr(pr.number, title="t2", body="b2")
    (patch,) = [r for r in server.requests if r.method == "PATCH"]
    assert patch.body == {"title": "t2", "body": "b2"}
    assert (updated.title, updated.body, updated.head) == ("t2", "b2", BRANCH)


def test_branch_names_are_url_encoded(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.add_branch(FORK, "feature/x")
    pr = gitcode.create_pr("feature/x", "master", "t", "b")
    assert pr.head == "feature/x"


# ---------------------------------------------------------------- auth, preflight, secrecy
def test_preflight_ok(gitcode: GitCodeForge) -> None:
    gitcode.preflight()


def test_bad_token_is_an_auth_error_naming_401(server: FakeGitCode, sleeps: SleepLog) -> None:
    forge = make_gitcode(server, sleeps, token="wrong-token-value")
    with pytest.raises(BackportError) as info:
        forge.preflight()
    assert info.value.code == "auth"
    assert "401" in info.value.message and f"{server.url}/user" in info.value.message
    assert "GITCODE_TOKEN" in info.value.message
    assert "wrong-token-value" not in info.value.message


def test_no_token_is_an_auth_error_without_any_request(server: FakeGitCode,
                                                       sleeps: SleepLog) -> None:
    forge = make_gitcode(server, sleeps, token=None)
    with pytest.raises(BackportError) as info:
        forge.preflight()
    assert info.value.code == "auth"
    assert server.requests == []


def test_401_on_a_write_is_auth(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.add_fault("POST", CREATE, Fault(status=401, body={"message": "401 Unauthorized"}))
    with pytest.raises(BackportError) as info:
        gitcode.create_pr(BRANCH, BASE, "t", "b")
    assert info.value.code == "auth"
    assert len(creates(server)) == 1


@pytest.mark.parametrize("missing, code", [("upstream", "upstream-unreachable"),
                                           ("fork", "fork-unreachable")])
def test_preflight_missing_repository(server: FakeGitCode, sleeps: SleepLog, missing, code) -> None:
    server.repos.discard(UPSTREAM if missing == "upstream" else FORK)
    forge = make_gitcode(server, sleeps)
    with pytest.raises(BackportError) as info:
        forge.preflight()
    assert info.value.code == code
    assert (UPSTREAM if missing == "upstream" else FORK) in info.value.message
    assert "404" in info.value.message


def test_project_not_found_as_400_plain_text(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.repos.discard(UPSTREAM)
    with pytest.raises(BackportError) as info:
        gitcode.list_prs()
    assert "answered 400: Project not found: Ascend/pytorch" in info.value.message


def test_error_with_trace_id(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.add_fault("GET", r"/pulls/\d+$", *[Fault(status=500, body={
        "error_code": 500, "error_message": "internal", "trace_id": "abc-123"})] * 5)
    with pytest.raises(BackportError) as info:
        gitcode.get_pr(1)
    assert info.value.message.endswith("answered 500: internal (trace id abc-123).")


def test_token_never_in_urls_or_errors(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    server.add_fault("GET", r"/pulls$", Fault(status=400, body={
        "message": f"token {TOKEN} is not allowed here"}))
    with pytest.raises(BackportError) as info:
        gitcode.list_prs()
    assert TOKEN not in str(info.value) and TOKEN not in repr(info.value.details)
    assert "***" in info.value.message
    server.add_fault("GET", r"/pulls$", Fault(status=502, body=f"upstream said {TOKEN}"))
    gitcode.create_pr(BRANCH, BASE, "t", "b")
    for request in server.requests:
        assert TOKEN not in request.raw_path
        assert request.auth == "private-token"


def test_user_agent_and_header_auth(server: FakeGitCode, gitcode: GitCodeForge) -> None:
    seen: list[str] = []
    original = server.handle

    def spy(method, path, query, body, token, **kw):
        seen.append(token)
        return original(method, path, query, body, token, **kw)

    server.handle = spy  # type: ignore[method-assign]
    gitcode.preflight()
    assert seen and all(t == TOKEN for t in seen)
    assert gitcode.client.session.headers["User-Agent"].startswith("backport/")


def test_fake_server_reads_branches_from_a_real_fork_repository(tmp_path, sleeps: SleepLog) -> None:
    env = {**os.environ, "LANG": "C", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
           "HOME": str(tmp_path)}
    fork_git, work = tmp_path / "fork.git", tmp_path / "work"

    def git(*args: str) -> None:
        subprocess.run(["git", *args], check=True, capture_output=True, env=env)

    git("init", "--bare", "-q", "--", str(fork_git))
    git("init", "-q", "--", str(work))
    git("-C", str(work), "-c", "user.name=T", "-c", "user.email=t@example.com",
        "commit", "-q", "--allow-empty", "-m", "init")
    with FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK,
                     git_dirs={FORK: fork_git}) as server:
        forge = make_gitcode(server, sleeps)
        with pytest.raises(BackportError, match="does not exist on GitCode"):
            forge.create_pr("pushed-later", BASE, "t", "b")
        git("-C", str(work), "push", "-q", str(fork_git), "HEAD:refs/heads/pushed-later")
        assert forge.create_pr("pushed-later", BASE, "t", "b").head == "pushed-later"
