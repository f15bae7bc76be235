"""When each branch's steps run: a branch is pushed as soon as it is tested, while the other
branches are still being applied and tested; PRs are still opened in target order (in-process,
local forge)."""

from __future__ import annotations

import shutil

from backport.demo.sandbox import Sandbox
from backport.pipeline.run import run_apply
from backport.pipeline.session import ApplyOptions
from tests.helpers.runs import TARGETS, Events, apply, project_of, prs, statuses


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


def test_a_batch_finishes_one_patch_set_before_the_next_starts(sandbox: Sandbox) -> None:
    # Two patch sets, one branch at a time: the first set's PRs are open before the second
    # set's first branch is tested (a batch's PRs appear as it goes, not all at its end).
    shutil.copytree(sandbox.project / "patches" / "put_metric",
                    sandbox.project / "patches" / "put_metric_b")
    events = Events()
    outcomes = run_apply(project_of(sandbox), [], ApplyOptions(skip_tests=True, jobs=1), events,
                         every=True)
    assert all(set(statuses(o).values()) == {"done"} for o in outcomes)
    steps = [(target, step) for target, step, _ in events.seen]
    first, second = (o.patch_set.name for o in outcomes)
    first_done = [i for i, (t, step) in enumerate(steps)
                  if step == "done" and t.startswith(f"{first}:")]
    second_tested = [i for i, (t, step) in enumerate(steps)
                     if step == "tested" and t.startswith(f"{second}:")]
    assert len(first_done) == 4 and max(first_done) < min(second_tested)
