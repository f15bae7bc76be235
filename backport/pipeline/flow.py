"""A branch's flow, top to bottom: proposed → apply → same_fix → test → push → pr.

`STEPS` is the whole order; each step is ``step(run, job) -> bool`` (True: the branch goes on)
with its guard. A branch's thread walks the steps before the first that runs `in_turn`; the
set's own thread then takes the turns in target order. An error stops its branch only, with
one redacted sentence in its record. A new step is one entry here, its function, its states
and moves (`states.py`) and its report (`report/`).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

from backport.errors import BackportError, ErrorCode, ForkDiverged
from backport.pipeline.pr_step import pr_step
from backport.pipeline.proposed import proposed_step, same_fix_step
from backport.pipeline.session import ApplyOptions, BranchJob, SetRun
from backport.pipeline.steps import apply_step, push_step, test_step
from backport.records import BranchRecord
from backport.redact import redact
from backport.states import Status


@dataclass(frozen=True)
class Step:
    """One step; ``in_turn``: run in target order; ``after_stop``: its guard alone decides."""

    name: str
    needed: Callable[[BranchRecord, ApplyOptions], bool]
    run: Callable[[SetRun, BranchJob], bool]
    in_turn: bool = False
    after_stop: bool = False


def always(rec: BranchRecord, options: ApplyOptions) -> bool:
    return True


def publishable(rec: BranchRecord, options: ApplyOptions) -> bool:
    """Tested, or failed with --pr-on-failure, in a run that pushes."""
    eligible = rec.status in (Status.TESTED, Status.PUSHED) or (
        rec.status == Status.TEST_FAILED and options.pr_on_failure and rec.commit is not None)
    return eligible and options.mode.pushes


STEPS: tuple[Step, ...] = (
    Step("proposed", always, proposed_step),
    Step("apply", always, apply_step),
    Step("same_fix", always, same_fix_step),
    Step("test", always, test_step),
    Step("push", publishable, push_step, after_stop=True),
    Step("pr", lambda rec, options: options.mode.opens_prs, pr_step, in_turn=True),
)


def run_branch(run: SetRun, job: BranchJob, steps: tuple[Step, ...] = STEPS) -> None:
    """``job``'s steps before the first that runs in turn; the schedule hears each one's end."""
    going = True
    try:
        for step in steps:
            if step.in_turn:
                break
            going = take(run, job, step, going)
            run.schedule.ended(job, step.name, going)
    finally:
        run.schedule.finished(job)


def take_turns(run: SetRun, steps: tuple[Step, ...] = STEPS) -> None:
    """The steps that run in turn, job by job, each once its branch ended the step before."""
    first = next((i for i, step in enumerate(steps) if step.in_turn), len(steps))
    if first == len(steps) or first == 0:
        return
    for job in run.jobs:
        going = run.schedule.wait(job, steps[first - 1].name)
        for step in steps[first:]:
            going = take(run, job, step, going)


def take(run: SetRun, job: BranchJob, step: Step, going: bool) -> bool:
    """Run ``step`` where the branch goes on (or it runs after a stop) and its guard says so."""
    return (going or step.after_stop) and step.needed(job.record, run.options) and guarded(
        run, job, step)


def guarded(run: SetRun, job: BranchJob, step: Step) -> bool:
    """Run one step; any error fails this branch only, with one sentence in the journal."""
    try:
        return step.run(run, job)
    except BackportError as exc:
        message, code = redact(exc.message), exc.code
        if isinstance(exc, ForkDiverged):
            remote = exc.remote
            job.stop(lambda r: r.fork_diverged(message, remote, code))
        else:
            job.stop(lambda r: r.failed(Status.FAILED, message, code))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - a bug must not take the other branches down
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        message = redact(f"internal error on {job.target}: {detail}")
        job.stop(lambda r: r.failed(Status.FAILED, message, ErrorCode.INTERNAL))
    return False
