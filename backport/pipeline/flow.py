"""A branch's flow: the named steps every (patch set, target) goes through, in order.

`STEPS` is the whole order: proposed → apply → test → push → pr. Each `Step` names its guard
(does it run for this record and these options), what it waits for, and its function;
`BranchFlow.run` is the one loop that walks them for one job. A step's function returns True
when the branch goes on; an error stops this branch only (`guarded`), with one redacted
sentence in its journal record. Adding a step (say, lint between test and push) is one entry
here, its function, its state (`states.py`) and its report.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from backport.errors import BackportError, ErrorCode, ForkDiverged
from backport.pipeline.pr_step import pr_step
from backport.pipeline.proposed import proposed_step
from backport.pipeline.schedule import Schedule
from backport.pipeline.session import ApplyOptions, Session
from backport.pipeline.steps import BranchJob, apply_step, push_step, test_step
from backport.records import BranchRecord
from backport.redact import redact
from backport.states import Status


class Wait(Enum):
    """What a step waits for before it runs."""

    NOTHING = "nothing"
    EARLIER_TARGETS = "its turn: every earlier target of the patch set had this step"


@dataclass(frozen=True)
class RunParts:
    """What the steps of one run share: the session, the fetched bases, the schedule, and
    which patch sets the run does only in part (their other branches' results are on the
    forge)."""

    session: Session
    bases: dict[str, str | BackportError]
    schedule: Schedule
    partial: frozenset[str]


Guard = Callable[[BranchRecord, ApplyOptions], bool]
StepFunction = Callable[[RunParts, BranchJob], bool]


@dataclass(frozen=True)
class Step:
    """One named step of a branch's flow.

    ``needed``: does it run for this record and these options; ``after_stop``: it runs even
    when the step before it stopped the branch (its guard alone decides); ``waits_for``:
    what the schedule holds it for; ``run``: the step, True when the branch goes on.
    """

    name: str
    needed: Guard
    run: StepFunction
    waits_for: Wait = Wait.NOTHING
    after_stop: bool = False


def always(rec: BranchRecord, options: ApplyOptions) -> bool:
    return True


def publishable(rec: BranchRecord, options: ApplyOptions) -> bool:
    """True for a branch the run pushes (and opens a PR for), or plans to: tested, or failed
    with --pr-on-failure, in a run whose reach goes past this machine."""
    eligible = rec.status in (Status.TESTED, Status.PUSHED) or (
        rec.status == Status.TEST_FAILED and options.pr_on_failure and rec.commit is not None)
    return eligible and options.course.pushes


def wants_pr(rec: BranchRecord, options: ApplyOptions) -> bool:
    return options.course.opens_prs


def run_proposed_step(parts: RunParts, job: BranchJob) -> bool:
    """The look-up runs only where the run would open a PR; elsewhere the branch goes on."""
    session = parts.session
    if not session.options.course.opens_prs:
        return True
    return proposed_step(job, session.remote.forge(), session.project.branch_map,
                         writers=session.writers, cache=session.cache)


def run_apply_step(parts: RunParts, job: BranchJob) -> bool:
    base = parts.bases[job.target]
    if isinstance(base, BackportError):
        raise base
    job.change(BranchRecord.error_cleared)
    return apply_step(job, base, parts.session.cache, state_dir=parts.session.project.state_dir,
                      force=parts.session.options.forces(job.patch_set.name), newer=parts.schedule)


def run_test_step(parts: RunParts, job: BranchJob) -> bool:
    session = parts.session
    return test_step(job, session.envs, session.project.branch_map, session.options)


def run_push_step(parts: RunParts, job: BranchJob) -> bool:
    session = parts.session
    return push_step(job, repo=session.cache.path, fork_url=session.project.branch_map.fork_url,
                     push_env=session.remote.push_env(), options=session.options,
                     fork=session.fork)


def run_pr_step(parts: RunParts, job: BranchJob) -> bool:
    session = parts.session
    pr_step(job, session.remote.forge(), session.docs(job.patch_set.api),
            session.project.branch_map, list(job.patch_set.branches),
            read_siblings=job.patch_set.name in parts.partial, new_pr=session.options.new_pr)
    return True


STEPS: tuple[Step, ...] = (
    Step("proposed", always, run_proposed_step),
    Step("apply", always, run_apply_step),
    Step("test", always, run_test_step),
    Step("push", publishable, run_push_step, after_stop=True),
    Step("pr", wants_pr, run_pr_step, waits_for=Wait.EARLIER_TARGETS),
)


class BranchFlow:
    """Walks `STEPS` for each job of a run; the schedule orders the jobs between them."""

    def __init__(self, parts: RunParts, steps: tuple[Step, ...] = STEPS) -> None:
        self.parts = parts
        self.steps = steps

    def run(self, job: BranchJob) -> None:
        """The whole flow of ``job`` (on a worker thread)."""
        self._walk(job, 0, going=True)

    def _walk(self, job: BranchJob, start: int, *, going: bool, in_turn: bool = False) -> None:
        schedule = self.parts.schedule
        for index in range(start, len(self.steps)):
            step = self.steps[index]
            if step.waits_for is Wait.EARLIER_TARGETS and not (in_turn and index == start):
                if schedule.arrive(job, step.name, going):
                    while (due := schedule.next_due(step.name)) is not None:
                        self._walk(due[0], index, going=due[1], in_turn=True)
                return
            try:
                if (going or step.after_stop) and step.needed(job.record, self.parts.session.options):
                    going = guarded(job, step, self.parts)
                else:
                    going = False
            finally:
                schedule.ended(job, step.name)


def guarded(job: BranchJob, step: Step, parts: RunParts) -> bool:
    """Run one step; any error fails this branch only, with one sentence in the journal."""
    try:
        return step.run(parts, job)
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
