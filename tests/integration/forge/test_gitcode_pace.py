"""The pace of one token across the threads and processes of one host (issue 29 item 8),
against the stand-in on 127.0.0.1."""

from __future__ import annotations

import threading
from pathlib import Path

from backport.forge.http import ApiClient, RateLimiter
from backport.forge.pace import RequestLog
from tests.fakes.forge import FORK, TOKEN, UPSTREAM, SleepLog
from tests.fakes.gitcode import FakeGitCode, Fault

UNPACED = ((10_000, 60.0),)


class FakeClock:
    """Wall time that passes only when someone sleeps; the stand-in reads the same clock."""

    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


def test_two_processes_of_one_token_share_one_pace_and_meet_no_429(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK, per_minute=5,
                     clock=clock) as server:
        # two runs of one user: each its own client and limiter, one log in the cache folder
        clients = [ApiClient(server.url, TOKEN, sleep=clock.sleep, limiter=RateLimiter(
            ((5, 60.0),), sleep=clock.sleep,
            shared=RequestLog(tmp_path / "pace.json", clock=clock)))
            for _ in range(2)]
        start = clock.now
        for _ in range(6):
            for client in clients:
                assert client.get("/user")["login"] == "lgxxx"
        assert server.rate_limited == 0
        assert all(r.status == 200 for r in server.requests) and len(server.requests) == 12
        assert clock.now - start >= 120.0  # 12 requests at 5 a minute: two minutes waited


def test_the_shared_log_is_named_by_a_hash_and_never_holds_the_token(
        server: FakeGitCode, sleeps: SleepLog, tmp_path: Path) -> None:
    for token in (TOKEN, TOKEN):
        ApiClient(server.url, token, sleep=sleeps, windows=UNPACED, pace_dir=tmp_path).get("/user")
    (log,) = tmp_path.iterdir()  # one token: one log, whichever process wrote it
    assert TOKEN not in log.name and TOKEN not in log.read_text(encoding="utf-8")
    assert len(__import__("json").loads(log.read_text(encoding="utf-8"))["requests"]) == 2
    server.tokens.add("another-token")
    ApiClient(server.url, "another-token", sleep=sleeps, windows=UNPACED,
              pace_dir=tmp_path).get("/user")
    assert len(list(tmp_path.iterdir())) == 2


def test_a_429_pauses_every_thread(server: FakeGitCode, sleeps: SleepLog) -> None:
    client = ApiClient(server.url, TOKEN, sleep=sleeps,
                       limiter=RateLimiter(UNPACED, sleep=sleeps))
    server.add_fault("GET", r"^/user$", Fault(status=429, headers={"Retry-After": "30"}))
    client.get("/user")  # this thread meets the 429 and waits 30 s itself
    assert sleeps.calls == [30.0]
    other = threading.Thread(target=client.get, args=("/user",))
    other.start()
    other.join()
    paused = sum(sleeps.calls[1:])  # another thread sending within those 30 s waits the rest
    assert 15.0 < paused <= 30.0  # (what is left of them however busy the machine)
    assert [r.status for r in server.requests] == [429, 200, 200]


def test_a_429_pauses_the_other_processes_of_the_token(server: FakeGitCode, sleeps: SleepLog,
                                                       tmp_path: Path) -> None:
    first, second = (ApiClient(server.url, TOKEN, sleep=sleeps, windows=UNPACED,
                               pace_dir=tmp_path) for _ in range(2))
    server.add_fault("GET", r"^/user$", Fault(status=429, headers={"Retry-After": "30"}))
    first.get("/user")
    second.get("/user")
    assert sleeps.calls[0] == 30.0 and 15.0 < sum(sleeps.calls[1:]) <= 30.0


def test_a_retry_after_date_is_read_against_the_replys_date(server: FakeGitCode,
                                                             sleeps: SleepLog) -> None:
    server.clock_offset = 3600.0  # the service's clock is an hour ahead of this host's
    server.add_fault("GET", r"^/user$",
                     Fault(status=429, headers={"Retry-After": server.server_date(30)}))
    client = ApiClient(server.url, TOKEN, sleep=sleeps, limiter=RateLimiter(UNPACED, sleep=sleeps))
    assert client.get("/user")["login"] == "lgxxx"
    (wait,) = sleeps.calls
    assert 15.0 <= wait <= 31.0  # not the hour more the host's own clock would add
