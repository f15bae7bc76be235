"""refname_problem agrees with ``git check-ref-format --branch``."""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backport.config.validate import refname_problem

ENV = {**os.environ, "LANG": "C", "LC_ALL": "C"}
# Names git accepts for --branch that we refuse on purpose ('@' means HEAD to git).
STRICTER = {"@"}


def git_accepts(name: str) -> bool:
    result = subprocess.run(
        ["git", "check-ref-format", "--branch", name], env=ENV, capture_output=True, check=False
    )
    return result.returncode == 0


NAMES = [
    "master", "v2.7.1", "release/v2.7", "test-put-metric-v2.7.1", "a{b", "a@b", "x/HEAD", "é",
    "HEAD", "@", "-x", "a b", "a..b", "a/.b", ".a", "a.lock", "a.lock/b", "a@{b", "a/", "/a",
    "a//b", "a.", "a\\b", "a~1", "a^", "a:b", "a?", "a*", "a[b", "a\tb", "a\x7fb", "",
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_agrees_with_git(name: str) -> None:
    if name in STRICTER:
        assert refname_problem(name) is not None
    else:
        assert (refname_problem(name) is None) == git_accepts(name), refname_problem(name)


def test_problem_texts() -> None:
    assert refname_problem("a..b") == "contains '..'"
    assert refname_problem("x" * 300) == "has a component longer than 255 bytes"
    assert refname_problem("ok/name") is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(alphabet=st.sampled_from(list("ab./-@{}~^:?*[\\ .lockHED")), min_size=1, max_size=12)
)
def test_never_accepts_what_git_refuses(name: str) -> None:
    if name in STRICTER:
        return
    assert (refname_problem(name) is None) == git_accepts(name), (name, refname_problem(name))
