"""What a batch reads once (GitCode stand-in on 127.0.0.1): the merged PRs into a target for
every set's already-proposed check, a post's comment read-back for the next listing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backport.forge.gitcode import GitCodeForge
from backport.forge.http import ApiClient, RateLimiter
from tests.fakes.gitcode import FakeGitCode

TOKEN = "gct-batch-0123456789"
UPSTREAM, FORK = "Ascend/pytorch", "lgxxx/pytorch"


@pytest.fixture
def server() -> Iterator[FakeGitCode]:
    fake = FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK)
    fake.start()
    yield fake
    fake.stop()


def client(server: FakeGitCode, clock=None) -> GitCodeForge:
    api = ApiClient(server.url, TOKEN, timeout=5.0, sleep=lambda s: None,
                    limiter=RateLimiter(((10_000, 60.0),), sleep=lambda s: None))
    extra = {"clock": clock} if clock is not None else {}
    return GitCodeForge(server.url, UPSTREAM, FORK, TOKEN, client=api, settle=0.0,
                        sleep=lambda s: None, **extra)


def merged_listings(server: FakeGitCode) -> int:
    return sum(1 for r in server.requests
               if r.path.endswith("/pulls") and r.query.get("state") == "merged")


def test_one_merged_listing_serves_every_set_of_the_batch_into_that_target(server):
    older = server.add_pr(head_repo=UPSTREAM, head="sync-old", base="v2.7.1")
    server.merge(older.number)  # where the newest-first reading stops
    sources = [server.add_pr(head_repo="x/pytorch", head=f"s{i}", base="master",
                             state="merged") for i in range(3)]
    synced = server.add_pr(head_repo=UPSTREAM, head="sync-pr-v2.7.1", base="v2.7.1")
    server.merge(synced.number)
    gitcode = client(server)
    low, *others = sorted(p.number for p in sources)
    assert [p.number for p in gitcode.later_prs(low, "v2.7.1")] == [synced.number]
    for number in others:  # numbered above the one read down to: no second reading
        assert [p.number for p in gitcode.later_prs(number, "v2.7.1")] == [synced.number]
    assert merged_listings(server) == 1
    gitcode.later_prs(low - 1, "v2.7.1")  # below where the reading stopped: read again
    gitcode.later_prs(low, "v2.11.0")  # another target: its own reading
    assert merged_listings(server) == 3


def test_a_merged_listing_older_than_the_listing_is_read_again(server):
    now = [1000.0]
    gitcode = client(server, clock=lambda: now[0])
    gitcode.later_prs(0, "v2.7.1")
    now[0] += gitcode.listing_ttl + 1
    late = server.add_pr(head_repo=UPSTREAM, head="sync-late", base="v2.7.1")
    server.merge(late.number)
    assert [p.number for p in gitcode.later_prs(0, "v2.7.1")] == [late.number]
    assert merged_listings(server) == 2


def test_the_listing_after_a_post_is_its_read_back_until_a_comment_is_written(server):
    pr = server.add_pr(head_repo="x/pytorch", head="s", base="master", state="merged")
    gitcode = client(server)
    posted = gitcode.post_comment(pr.number, "summary")

    def reads() -> int:
        return sum(1 for r in server.requests
                   if r.method == "GET" and r.path.endswith(f"/pulls/{pr.number}/comments"))

    assert reads() == 1  # the post's read-back
    assert [c.id for c in gitcode.list_comments(pr.number)] == [posted.id]
    assert reads() == 1
    gitcode.list_comments(pr.number)  # served once: the next one reads
    assert reads() == 2
    gitcode.post_comment(pr.number, "again")
    gitcode.edit_comment(pr.number, posted.id, "edited")  # a write: the read-back is stale
    assert [c.body for c in gitcode.list_comments(pr.number)] == ["edited", "again"]
