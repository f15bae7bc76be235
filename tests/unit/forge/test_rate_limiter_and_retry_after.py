"""The HTTP client's rate limiter windows, Retry-After parsing and URL segment encoding."""

from __future__ import annotations

import email.utils
import time

from backport.forge.http import RateLimiter, retry_after_seconds, seg

from .conftest import take_slot


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_rate_limiter_keeps_50_per_minute() -> None:
    clock = FakeClock()
    limiter = RateLimiter(((50, 60.0),), clock=clock, sleep=clock.sleep)
    stamps = []
    for _ in range(120):
        take_slot(limiter)
        stamps.append(clock.now)
        clock.now += 0.1
    for i, start in enumerate(stamps):  # never more than 50 in any 60-second window
        assert sum(1 for s in stamps[i:] if s < start + 60.0) <= 50
    assert clock.slept and stamps[50] >= stamps[0] + 60.0


def test_rate_limiter_combines_windows() -> None:
    clock = FakeClock()
    limiter = RateLimiter(((5, 1.0), (8, 100.0)), clock=clock, sleep=clock.sleep)
    for _ in range(9):
        take_slot(limiter)
    assert clock.now >= 1100.0  # the ninth waited for the hourly-style window


def test_retry_after_parsing() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(" 0 ") == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_seconds(future) <= 31
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_seg_encodes_slashes() -> None:
    assert seg("feature/x y") == "feature%2Fx%20y"
    assert seg(12) == "12"
