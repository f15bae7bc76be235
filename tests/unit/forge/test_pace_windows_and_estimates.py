"""GitCode's pace: limit windows parsed, long waits announced, a dry run's estimate, no token said at once."""

from __future__ import annotations

import pytest

from backport.forge.gitcode import GitCodeForge
from backport.forge.http import RateLimiter
from backport.forge.pace import parse_windows
from tests.fakes.forge import FORK, TOKEN, UPSTREAM

from .conftest import take_slot


def test_a_long_wait_is_announced_with_seconds_left() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    notes: list[str] = []
    limiter = RateLimiter(((2, 60.0),), clock=lambda: now[0], sleep=sleep, notify=notes.append,
                          progress_every=15.0)
    for _ in range(3):
        take_slot(limiter)
    assert notes[0] == ("GitCode API: waiting 60s (2 requests in the last minute; the limit is "
                        "2 per minute)")
    assert notes[1:] == ["GitCode API: waiting 45s", "GitCode API: waiting 30s",
                         "GitCode API: waiting 15s", "GitCode API: waited 60s; sending again"]
    assert sum(slept) == 60.0


def test_parse_windows() -> None:
    assert parse_windows("50/60,4000/3600") == ((50, 60.0), (4000, 3600.0))
    for bad in ("50", "0/60", "50/0", "x/60", ""):
        with pytest.raises(ValueError):
            parse_windows(bad)


def test_missing_says_no_token_without_the_network() -> None:
    forge = GitCodeForge("http://127.0.0.1:9/api/v5", UPSTREAM, FORK, None)
    (missing,) = forge.missing()
    assert missing.startswith("no GitCode token for http://127.0.0.1:9/api/v5: set GITCODE_TOKEN")
    assert GitCodeForge("http://127.0.0.1:9/api/v5", UPSTREAM, FORK, TOKEN).missing() == []


def test_a_dry_run_estimates_a_batch_and_its_wait() -> None:
    from backport.forge.dryrun import DryRunForge
    plan: list[str] = []
    dry = DryRunForge(None, plan.append, upstream=UPSTREAM, fork=FORK, name="gitcode")
    for index in range(80):  # 20 sets of four branches, no token: reads are estimated
        pr = dry.create_pr(f"b{index}", "master", "t", "b")
        dry.link_issues(pr.number, [3216])
    summary = dry.request_summary(20)
    # 3 + 2 x 20 reads and each set's issue; per PR the open PRs into its base read afresh,
    # a create, its read-back, the link; per set its PRs listed afresh (open, locked) and all
    # but its last body rewritten (one PATCH each)
    assert summary == ("about 483 GitCode API requests for 80 new PR(s) in 20 patch set(s) "
                       "(63 reads estimated, 420 for the writes and their read-backs); under the "
                       "limit of 50 per minute and 4000 per hour, that takes at least 9 min")
    assert DryRunForge(None, plan.append, upstream=UPSTREAM, fork=FORK,
                       name="local").request_summary(1) is None
