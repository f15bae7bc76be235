"""The one parser of numbers from outside text: at most 10 ASCII digits, never int() of more."""

from __future__ import annotations

import json

import pytest

from backport.numerals import MAX_DIGITS, json_number, number, parse_int

HUGE = "9" * 5000  # int() of it raises "Exceeds the limit (4300 digits)"


@pytest.mark.parametrize(("text", "value"), [
    ("42810", 42810), (" 7 ", 7), ("0", 0), ("9" * MAX_DIGITS, 10**MAX_DIGITS - 1),
    ("9" * (MAX_DIGITS + 1), None), (HUGE, None), ("", None), ("-3", None), ("+3", None),
    ("4_2", None), ("١٢٣", None), ("12a", None), ("1.0", None),
])
def test_number_reads_at_most_ten_ascii_digits(text: str, value: int | None) -> None:
    assert number(text) == value


@pytest.mark.parametrize(("value", "read"), [
    (5120, 5120), ("5120", 5120), (True, None), (None, None), (-1, None), (1.5, None),
    (10**MAX_DIGITS, None), (HUGE, None), ({"n": 1}, None),
])
def test_a_json_value_is_a_number_only_when_bounded(value: object, read: int | None) -> None:
    assert json_number(value) == read


def test_json_keeps_an_overlong_integer_as_text_instead_of_failing() -> None:
    data = json.loads(f'{{"a": {HUGE}, "b": 12, "c": -7}}', parse_int=parse_int)
    assert data == {"a": HUGE, "b": 12, "c": -7}
    assert json_number(data["a"]) is None
