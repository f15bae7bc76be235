"""`GitCodeForge.current_pr`: the PR to write over, read again only when the listing just read
shows that someone wrote it since this client last read or wrote it (stand-in on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backport.forge.gitcode import GitCodeForge
from backport.forge.http import ApiClient, RateLimiter
from tests.fakes.gitcode import FakeGitCode

TOKEN = "gct-current-0123456789"
UPSTREAM, FORK = "Ascend/pytorch", "lgxxx/pytorch"
READ = "GET /repos/Ascend/pytorch/pulls/{n}"


@pytest.fixture
def server() -> Iterator[FakeGitCode]:
    fake = FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK, list_body_limit=10)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def gitcode(server: FakeGitCode) -> GitCodeForge:
    client = ApiClient(server.url, TOKEN, timeout=5.0, sleep=lambda s: None,
                       limiter=RateLimiter(((10_000, 60.0),), sleep=lambda s: None))
    return GitCodeForge(server.url, UPSTREAM, FORK, TOKEN, client=client, settle=0.0,
                        sleep=lambda s: None)


def test_a_pr_unchanged_since_this_client_wrote_it_is_not_read_again(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo=FORK, head="b", base="master", body="a long body of ours")
    gitcode.update_pr(pr.number, title="t", body="the body written once")
    gitcode.list_prs("open", fresh=True)  # list bodies are cut to 10 characters here
    reads = server.counts().get(READ, 0)
    current = gitcode.current_pr(pr.number)
    assert current.body == "the body written once"  # whole, as written, not as listed
    assert server.counts().get(READ, 0) == reads


def test_a_pr_someone_wrote_since_is_read_again(server: FakeGitCode,
                                                gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo=FORK, head="b", base="master", body="ours")
    gitcode.update_pr(pr.number, title="t", body="the body written once")
    with server.lock:  # a maintainer's note, a moment later
        pr.body += "\n\nMaintainer note: checked on 910B."
        pr.updated_at = "2099-01-01T00:00:00+00:00"
    gitcode.list_prs("open", fresh=True)
    reads = server.counts().get(READ, 0)
    assert gitcode.current_pr(pr.number).body.endswith("Maintainer note: checked on 910B.")
    assert server.counts().get(READ, 0) == reads + 1


def test_without_a_listing_since_the_pr_is_read(server: FakeGitCode,
                                                gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo=FORK, head="b", base="master", body="ours")
    gitcode.update_pr(pr.number, title="t", body="the body written once")
    reads = server.counts().get(READ, 0)
    assert gitcode.current_pr(pr.number).body == "the body written once"
    assert server.counts().get(READ, 0) == reads + 1
