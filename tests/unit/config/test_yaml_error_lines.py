"""A YAML syntax error is named at the line where the broken construct starts."""

from __future__ import annotations

import pytest

from backport.config.yamlsafe import LineProblem, parse_yaml


def problem_of(text: str) -> LineProblem:
    with pytest.raises(LineProblem) as caught:
        parse_yaml(text)
    return caught.value


@pytest.mark.parametrize(("text", "line", "said"), [
    ("a: 1\nb: {x: 1,\n  y: 2\nc: 3\n", 2,
     "the flow mapping opened here with { (column 4) is not closed: on line 4, column 2: "
     "expected ',' or '}', but got ':'"),
    ("a: 1\nb: [1, 2\nc: 3\n", 2, "the flow sequence opened here with [ (column 4)"),
    ('a: 1\nb: "abc\nc: 3\n', 2,
     'the quoted string opened here with " (column 4) is not closed: the file ends before it '
     'is closed'),
    ("a: 1\nb: 'abc\nc: 3\n", 2, "the quoted string opened here with ' (column 4)"),
])
def test_an_unclosed_bracket_or_quote_is_named_where_it_opened(text: str, line: int,
                                                               said: str) -> None:
    problem = problem_of(text)
    assert problem.line == line
    assert said in str(problem), str(problem)


def test_an_error_that_opens_nothing_is_named_where_the_parser_stopped() -> None:
    problem = problem_of("a: 1\n\tb: 2\n")
    assert problem.line == 2
    assert "YAML syntax error" in str(problem)
