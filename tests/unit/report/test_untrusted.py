"""The one rule for text from outside (`report/untrusted.py`), place by place."""

from __future__ import annotations

import pytest

from backport.report.untrusted import untrusted
from tests.helpers.hostile_text import HOSTILE, read

GOLDEN = [
    # text, prose, code, cell-span
    ("<!-- backport:evidence:end -->", "&lt;!-- backport:evidence:end --&gt;",
     "<! -- backport:evidence:end -- >", "`<! -- backport:evidence:end -- >`"),
    ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;",
     "<img src=x onerror=alert(1)>", "`<img src=x onerror=alert(1)>`"),
    ("[x](http://evil)", "\\[x\\](`http://evil)`", "[x](http://evil)", "`[x](http://evil)`"),
    ("![](http://evil)", "!\\[\\](`http://evil)`", "![](http://evil)", "`![](http://evil)`"),
    ("go http://evil now", "go `http://evil` now", "go http://evil now", "`go http://evil now`"),
    ("a|b", "a\\|b", "a|b", "`a\\|b`"),
    ("a\nb\r\n\tc", "a b c", "a b c", "`a b c`"),
    ("x `y` ```z", "x \\`y\\` \\`\\`\\`z", "x `y` ` ` `z", "````x `y` ```z````"),
    ("@mention", "`@mention`", "@mention", "`@mention`"),
    ("#123 !123", "`#123` `!123`", "#123 !123", "`#123 !123`"),
    ("&lt; &#60; & x", "&amp;lt; &amp;#60; & x", "&lt; &#60; & x", "`&lt; &#60; & x`"),
    ("a\u200bb\u202ec\u2066d", "a\ufffdb\ufffdc\ufffdd", "a\ufffdb\ufffdc\ufffdd",
     "`a\ufffdb\ufffdc\ufffdd`"),
    ("# title", "\\# title", "# title", "`# title`"),
    ("Ran 7 tests in 0.054s", "Ran 7 tests in 0.054s", "Ran 7 tests in 0.054s",
     "`Ran 7 tests in 0.054s`"),
    ("AssertionError: 1 != 2", "AssertionError: 1 != 2", "AssertionError: 1 != 2",
     "`AssertionError: 1 != 2`"),
]


@pytest.mark.parametrize(("text", "prose", "code", "span"), GOLDEN)
def test_each_place_writes_the_golden_text(text: str, prose: str, code: str, span: str) -> None:
    assert untrusted(text, where="prose") == prose
    assert untrusted(text, where="code") == code
    assert untrusted(text, where="cell-span") == span


@pytest.mark.parametrize("text", HOSTILE)
def test_a_cell_stays_one_cell_of_plain_text(text: str) -> None:
    table = f"| a | b |\n| --- | --- |\n| {untrusted(text, where='cell')} | {untrusted(text, where='cell-span')} |\n"
    seen = read(table)
    assert seen.rows == [2, 2] and seen.html == [] and seen.links == [] and seen.live_text == []


@pytest.mark.parametrize("text", HOSTILE)
def test_a_code_line_ends_no_fence_and_is_written_again_unchanged(text: str) -> None:
    line = untrusted(text, where="code")
    seen = read(f"```text\n{line}\n```\n\nafter")
    assert seen.fences == [line + "\n"] and seen.html == []
    assert untrusted(line, where="code") == line


def test_an_unknown_place_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown place"):
        untrusted("x", where="table")  # type: ignore[arg-type]
