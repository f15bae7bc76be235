"""The PR create reads as one transaction in the GitCode client: `create_pr` itself calls its
three steps in order — create (`_post_pr`), read back (`_read_created`), correct
(`_correct`) — and `verify_pr` (a PR judged on a later run) the last two; no step calls the
next one behind the reader's back."""

from __future__ import annotations

import ast
import inspect
import textwrap

from backport.forge.gitcode import GitCodeForge

STEPS = ["_post_pr", "_read_created", "_correct"]


def self_calls(function: object) -> list[str]:
    """The private methods of ``self`` a method calls, in source order (once each)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))  # type: ignore[arg-type]
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
             and node.func.value.id == "self" and node.func.attr.startswith("_")]
    names = [c.func.attr for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]  # type: ignore[attr-defined]
    return list(dict.fromkeys(names))


def test_create_pr_takes_its_three_steps_itself() -> None:
    assert [name for name in self_calls(GitCodeForge.create_pr) if name in STEPS] == STEPS
    assert len(self_calls(GitCodeForge.create_pr)) <= 4  # the three, and the look-up first


def test_verify_pr_is_the_read_back_and_the_correction() -> None:
    assert self_calls(GitCodeForge.verify_pr) == STEPS[1:]


def test_no_step_calls_the_next() -> None:
    for step in STEPS:
        called = self_calls(getattr(GitCodeForge, step))
        assert not set(called) & set(STEPS), (step, called)
