"""The HTTP client against a server on 127.0.0.1: retry policy, redirects, error text."""

from __future__ import annotations

import pytest

from backport.errors import BackportError
from backport.forge.http import ApiClient, RateLimiter
from tests.fakes.forge import TOKEN, SleepLog
from tests.fakes.gitcode import FakeGitCode, Fault


@pytest.fixture
def client(server: FakeGitCode, sleeps: SleepLog) -> ApiClient:
    return ApiClient(server.url, TOKEN, timeout=5.0, sleep=sleeps,
                     limiter=RateLimiter(((10_000, 60.0),), sleep=sleeps))


def test_get_retries_connection_errors(server: FakeGitCode, client: ApiClient) -> None:
    server.add_fault("GET", r"^/user$", Fault(drop=True), Fault(status=504))
    assert client.get("/user")["login"] == "lgxxx"
    assert len(server.requests) == 3


def test_post_is_not_retried_unless_asked(server: FakeGitCode, client: ApiClient) -> None:
    server.add_fault("POST", r"/comments$", Fault(status=502))
    with pytest.raises(BackportError) as info:
        client.request("POST", "/repos/Ascend/pytorch/pulls/1/comments", json={"body": "x"})
    assert "answered 502" in info.value.message
    assert len(server.requests) == 1


def test_post_retried_when_caller_allows(server: FakeGitCode, client: ApiClient) -> None:
    server.members.add(server.login)
    server.add_pr(head_repo="lgxxx/pytorch", head="b", base="master")
    server.add_fault("POST", r"/labels$", Fault(status=502))
    client.request("POST", "/repos/Ascend/pytorch/pulls/1/labels", json=["a"], retry=True)
    assert server.prs[1].labels == ["a"]


def test_attempts_are_bounded(server: FakeGitCode, client: ApiClient, sleeps: SleepLog) -> None:
    server.add_fault("GET", r"^/user$", *[Fault(status=503)] * 10)
    with pytest.raises(BackportError):
        client.get("/user")
    assert len(server.requests) == 5 and len(sleeps.calls) == 4


def test_huge_retry_after_is_not_waited(server: FakeGitCode, client: ApiClient,
                                        sleeps: SleepLog) -> None:
    server.add_fault("GET", r"^/user$", Fault(status=429, headers={"Retry-After": "3600"}))
    with pytest.raises(BackportError) as info:
        client.get("/user")
    assert "answered 429" in info.value.message and sleeps.calls == []


def test_plain_text_and_json_error_shapes(server: FakeGitCode, client: ApiClient) -> None:
    server.add_fault("GET", r"^/user$", Fault(status=418, body="Request rejected, suspected unsafe"),
                     Fault(status=400, body={"error": "bad thing"}))
    with pytest.raises(BackportError, match="answered 418: Request rejected, suspected unsafe."):
        client.get("/user")
    with pytest.raises(BackportError, match="answered 400: bad thing."):
        client.get("/user")


def test_redirects_are_not_followed(server: FakeGitCode, client: ApiClient) -> None:
    server.add_fault("GET", r"^/user$", Fault(status=302, body="", headers={
        "Location": "http://evil.example/steal"}))
    with pytest.raises(BackportError) as info:
        client.get("/user")
    assert "302" in info.value.message and "not followed" in info.value.message
    assert len(server.requests) == 1


def test_timeout_names_the_url(server: FakeGitCode, sleeps: SleepLog) -> None:
    client = ApiClient(server.url, TOKEN, timeout=0.3, sleep=sleeps, max_attempts=1,
                       limiter=RateLimiter(((10_000, 60.0),), sleep=sleeps))
    server.add_fault("GET", r"^/user$", Fault(stall=1.0))
    with pytest.raises(BackportError) as info:
        client.get("/user")
    assert info.value.message == f"GitCode API GET {server.url}/user timed out after 0.3s."
