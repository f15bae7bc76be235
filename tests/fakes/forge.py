"""Stand-in forges for the forge tests: the fake GitCode server and forges bound to it, the
local forge (fixtures), and what a maintainer does on the local forge's web page."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from backport.config.model import BranchMap, Environment, Target
from backport.forge.base import PullRequest
from backport.forge.gitcode import GitCodeForge
from backport.forge.http import ApiClient, RateLimiter
from backport.forge.local import LocalForge
from tests.fakes.gitcode import FakeGitCode

TOKEN = "gct-SeCrEt-0123456789abcdef"
UPSTREAM = "Ascend/pytorch"
FORK = "lgxxx/pytorch"
BRANCH = "test-put-metric-v2.7.1"
BASE = "v2.7.1"


class SleepLog:
    """An injectable ``sleep`` that records instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleeps() -> SleepLog:
    return SleepLog()


@pytest.fixture
def server() -> Iterator[FakeGitCode]:
    fake = FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK,
                       branches={FORK: {BRANCH, "test-put-metric-v2.11.0", "other"},
                                 UPSTREAM: {"v2.7.1", "v2.11.0", "master", BRANCH}})
    fake.start()
    yield fake
    fake.stop()


def make_gitcode(server: FakeGitCode, sleeps: SleepLog, *, token: str | None = TOKEN,
                 timeout: float = 5.0, fork: str = FORK) -> GitCodeForge:
    client = ApiClient(server.url, token, timeout=timeout, sleep=sleeps,
                       limiter=RateLimiter(((10_000, 60.0),), sleep=sleeps))
    return GitCodeForge(server.url, UPSTREAM, fork, token, client=client, settle=0.0,
                        sleep=sleeps)


@pytest.fixture
def gitcode(server: FakeGitCode, sleeps: SleepLog) -> GitCodeForge:
    return make_gitcode(server, sleeps)


@pytest.fixture
def local(tmp_path: Path) -> LocalForge:
    return LocalForge(tmp_path / "state" / "forge.sqlite", upstream=UPSTREAM, fork=FORK)


@pytest.fixture
def no_token_leak(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Capture all logging at DEBUG and fail if the token shows up in any record."""
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.records:
        assert TOKEN not in record.getMessage()
    assert TOKEN not in caplog.text


def branch_map(tmp_path: Path, forge: str, api_url: str = "https://api.gitcode.com/api/v5") -> BranchMap:
    return BranchMap(
        path=tmp_path / "branches.yaml", forge=forge, upstream=UPSTREAM, fork=FORK,
        fork_branch="test-{slug}-{target}", upstream_url=str(tmp_path / "up.git"),
        fork_url=str(tmp_path / "fork.git"), api_url=api_url,
        environments={"e": Environment(name="e", python=Path("/usr/bin/python3"))},
        targets={BASE: Target(name=BASE, env="e")},
    )


def set_state(forge: LocalForge, number: int, state: str) -> PullRequest:
    """Close, merge or reopen PR ``number`` of ``forge``'s database, as the web page would."""
    assert state in ("open", "closed", "merged"), state
    with sqlite3.connect(forge.path) as db:
        changed = db.execute("UPDATE prs SET state = ? WHERE number = ?", (state, number))
        assert changed.rowcount == 1, f"no PR {number}"
        if state == "merged":
            db.execute("INSERT OR IGNORE INTO pr_merged (pr, merged_at) VALUES (?, "
                       "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))", (number,))
    return forge.get_pr(number)
