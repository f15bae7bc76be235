"""The one parser of numbers read from outside text (a PR's ``!N``, an event's
``pull_request.number``, a log's ``Ran N tests``…). Patterns capture ASCII digits only
(`DIGITS`: ``\\d`` matches other scripts' digits too) and `number` takes at most `MAX_DIGITS`
of them: never an ``int()`` of thousands of digits, which Python refuses.
"""

from __future__ import annotations

from typing import Any

MAX_DIGITS = 10  # every PR, issue, count and page number is shorter
DIGITS = "[0-9]+"  # what a pattern captures for :func:`number` to decide


def number(digits: str) -> int | None:
    """The number ``digits`` (ASCII, spaces around allowed) writes; None past MAX_DIGITS."""
    text = digits.strip()
    if not 0 < len(text) <= MAX_DIGITS or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def json_number(value: Any) -> int | None:
    """A JSON integer (never a boolean) or string of at most MAX_DIGITS digits; else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < 10**MAX_DIGITS else None
    return number(value) if isinstance(value, str) else None


def parse_int(digits: str) -> int | str:
    """``json.loads``' ``parse_int``: a longer integer than MAX_DIGITS is left as its text."""
    return int(digits) if len(digits.lstrip("-")) <= MAX_DIGITS else digits
