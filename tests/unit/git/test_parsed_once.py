"""A run reads one file's text several times (the tests a series adds, those already there,
what hides one): each text is parsed and compiled once."""

from __future__ import annotations

import pytest

from backport.git import python_tests

SOURCE = "class T:\n    def test_a(self):\n        pass\n"


def test_the_same_text_is_parsed_once_and_a_changed_one_again() -> None:
    tree = python_tests.parsed(SOURCE, "test_x.py")
    assert python_tests.parsed(SOURCE, "test_x.py") is tree
    assert python_tests.compiled(SOURCE, "test_x.py") is tree  # compiled, from the same tree
    assert python_tests.compile_problem(SOURCE, "test_x.py") is None
    changed = python_tests.parsed(SOURCE + "    def test_b(self):\n        pass\n", "test_x.py")
    assert changed is not tree
    assert [d.name for d in python_tests.test_definitions(changed)] == ["test_a", "test_b"]


def test_a_text_that_does_not_parse_or_compile_fails_every_time() -> None:
    for _ in range(2):
        with pytest.raises(SyntaxError):
            python_tests.parsed("def (:\n", "test_bad.py")
        assert python_tests.compile_problem("return 1\n", "test_ret.py") == (
            "line 1: 'return' outside function")
