"""When each branch's steps run: a branch is pushed as soon as it is tested, while the other
branches are still being applied and tested; PRs are still opened in target order (in-process,
local forge)."""

from __future__ import annotations

from backport.demo.sandbox import Sandbox
from tests.pipeline.test_rerun_rules import TARGETS, apply, prs, statuses


def test_a_tested_branch_is_pushed_before_the_others_are_tested(sandbox: Sandbox) -> None:
    # One branch at a time (--jobs 1) makes the order of the steps deterministic.
    outcome, events = apply(sandbox, skip_tests=True, jobs=1)
    assert statuses(outcome) == dict.fromkeys(TARGETS, "done")
    steps = [(target, step) for target, step, _ in events.seen]
    first_pushed = next(i for i, (_, step) in enumerate(steps) if step == "pushed")
    last_tested = max(i for i, (_, step) in enumerate(steps) if step == "tested")
    assert first_pushed < last_tested
    for target in TARGETS:  # each branch still goes through its steps in order
        own = [step for t, step in steps if t == target]
        assert own.index("tested") < own.index("pushed") < own.index("done")
    # The PRs are numbered in target order, whichever branch was pushed first.
    assert [(number, base) for number, base, _, _ in prs(sandbox)] == list(
        enumerate(TARGETS, start=1))
