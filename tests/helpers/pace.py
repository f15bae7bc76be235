"""A request's turn of the rate limiter, taken and given back at once."""

from __future__ import annotations

from backport.forge.http import RateLimiter


def take_slot(limiter: RateLimiter) -> float:
    """Block until a request may be sent and count it as sent now; the seconds waited."""
    with limiter.slot() as waited:
        return waited
