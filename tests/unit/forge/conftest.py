"""Fixtures of the forge unit tests: the local forge (SQLite in tmp_path), an injected sleep,
a rate limiter's turn."""

from __future__ import annotations

from backport.forge.http import RateLimiter
from tests.fakes.forge import local, no_token_leak, sleeps  # noqa: F401  (registered as fixtures)


# A request's turn of the rate limiter, taken and given back at once.
def take_slot(limiter: RateLimiter) -> float:
    """Block until a request may be sent and count it as sent now; the seconds waited."""
    with limiter.slot() as waited:
        return waited
