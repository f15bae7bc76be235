"""The one parser of numbers read from outside text: a PR's ``!N``, a title's ``PR-N``, a
branch's ``sync-prN-``, an event's ``pull_request.number``, a log's ``Ran N tests``.

Patterns capture ASCII digits only (:data:`DIGITS`; ``\\d`` also matches other scripts'
digits, which ``int`` would read) and hand them to :func:`number`, which takes at most
:data:`MAX_DIGITS` of them: a longer run of digits is no number this tool reads (never an
``int()`` of thousands of digits, which Python refuses with a ``ValueError``).
"""

from __future__ import annotations

from typing import Any

MAX_DIGITS = 10  # every PR, issue, count and page number is shorter
DIGITS = "[0-9]+"  # what a pattern captures for :func:`number` to decide
LIMIT = 10**MAX_DIGITS


def number(digits: str) -> int | None:
    """The number ``digits`` (ASCII digits, spaces around allowed) writes, when it has at
    most ``MAX_DIGITS`` digits; None otherwise."""
    text = digits.strip()
    if not 0 < len(text) <= MAX_DIGITS or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def json_number(value: Any) -> int | None:
    """A JSON value read as a number: an integer (never a boolean) or a string of digits,
    below ``10**MAX_DIGITS``; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < LIMIT else None
    return number(value) if isinstance(value, str) else None


def parse_int(digits: str) -> int | str:
    """``json.loads``' ``parse_int``: an integer of at most ``MAX_DIGITS`` digits (a sign
    allowed) as an int, a longer one left as its text (:func:`json_number` then refuses it)."""
    body = digits.lstrip("-")
    return int(digits) if len(body) <= MAX_DIGITS else digits
