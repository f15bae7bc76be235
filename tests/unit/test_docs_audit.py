"""The docs audit from page texts: an entry and its support table, the summary wording, the version order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from backport.docs_audit import (
    NO,
    YES,
    SupportRow,
    normalise_mark,
    parse_entry,
    summarize,
    version_key,
)
from tests.helpers.docs_pages import API, LISTED_PLAIN


def test_parse_entry_ignores_later_tables() -> None:
    listed, rows, _ = parse_entry(LISTED_PLAIN, API)
    assert listed and [r.hardware for r in rows] == ["Board One", "Board Two", "Board Three"]
    assert parse_entry(LISTED_PLAIN, "torch.distributed.elastic.metrics") == (False, [], "")


def test_summary_wording() -> None:
    assert summarize([SupportRow("A", NO), SupportRow("B", NO)]) == "否"
    assert summarize([SupportRow("A", YES), SupportRow("B", "partly")]) == "是（B: partly）"
    assert summarize([]) == "已收录，无支持表"
    assert normalise_mark(" &#10004; ") == YES
    assert normalise_mark("&#x2718;") == NO


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
                min_size=1, max_size=8))
def test_version_key_is_numeric(versions: list[tuple[int, int, int]]) -> None:
    names = [".".join(map(str, v)) for v in versions]
    assert sorted(names, key=version_key) == [".".join(map(str, v)) for v in sorted(versions)]
