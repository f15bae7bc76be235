"""One patch set's run: `ran` and `partial` computed once, and the one scheduling protocol —
each branch's steps on its own worker, the PR turns on the set's thread in target order, an
older target's apply after the newer ones' (pure Python: stub steps, a journal that writes
nothing)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from backport.pipeline.journal import Journal
from backport.pipeline.run import Step, always, run_branch, take_turns
from backport.pipeline.session import ApplyOptions, BranchJob, Schedule, SetRun
from tests.helpers import report_fixtures as fx

OLDEST_FIRST = list(fx.TARGETS)  # the set's (target) order: v2.7.1 … master


class Progress:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, target: str, step: str, detail: str = "") -> None:
        self.seen.append((target, step, detail))


def set_run(targets: list[str]) -> SetRun:
    ps = fx.patch_set()
    journal = Journal(Path("/nonexistent/journal.json"), ps.name, ps.api, persist=False)
    session: Any = SimpleNamespace(options=ApplyOptions(), project=SimpleNamespace(
        branch_map=fx.branch_map()))
    run = SetRun(ps, journal, list(targets), [], session, Progress())
    for target in targets:
        journal.record(target, f"fb-{target}")
        run.jobs.append(BranchJob(ps, target, f"fb-{target}", journal, run.event_for(target)))
    return run


def test_ran_and_partial_are_the_sets_own() -> None:
    assert set_run(OLDEST_FIRST).partial is False
    some = set_run(["v2.11.0", "master"])
    assert some.ran == {"v2.11.0", "master"} and some.partial is True
    assert some.job_for("master") is some.jobs[1]  # a sibling not run here gets a job too
    assert some.job_for("v2.7.1").fork_branch == "test-put-metric-v2.7.1"


class Recorder:
    """Stub steps that note (step, target, thread) and end in the order they are told."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, str]] = []

    def note(self, step: str, job: BranchJob) -> None:
        with self.lock:
            self.seen.append((step, job.target, threading.current_thread().name))

    def work(self, run: SetRun, job: BranchJob) -> bool:
        self.note("work", job)
        return job.target != "v2.11.0"  # this branch stops before its PR

    def pr(self, run: SetRun, job: BranchJob) -> bool:
        self.note("pr", job)
        return True


@pytest.mark.parametrize("workers", [1, 3])
def test_pr_turns_come_in_target_order_on_the_sets_thread(workers: int) -> None:
    run, steps = set_run(OLDEST_FIRST), Recorder()
    flow = (Step("work", always, steps.work), Step("pr", always, steps.pr, in_turn=True))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="branch") as pool:
        newest_first = list(reversed(run.jobs))
        branches = [pool.submit(run_branch, run, job, flow) for job in newest_first]
        take_turns(run, flow)
        for branch in branches:
            branch.result()
    prs = [(target, thread) for step, target, thread in steps.seen if step == "pr"]
    assert [t for t, _ in prs] == ["v2.7.1", "v2.12.0", "master"]  # v2.11.0 stopped
    assert {thread for _, thread in prs} == {threading.current_thread().name}
    assert all(thread.startswith("branch") for step, _, thread in steps.seen if step == "work")


def test_a_branch_that_crashes_ends_its_turn_instead_of_hanging_it() -> None:
    run = set_run(["master"])
    (job,) = run.jobs

    def crash(run: SetRun, job: BranchJob) -> bool:
        raise KeyboardInterrupt  # passes `guarded`, as an interrupt does

    flow = (Step("work", always, crash), Step("pr", always, Recorder().pr, in_turn=True))
    with pytest.raises(KeyboardInterrupt):
        run_branch(run, job, flow)
    assert run.schedule.wait(job, "work") is False  # ended, the branch not going on


def test_the_schedule_answers_whether_the_branch_went_on() -> None:
    run = set_run(["v2.12.0", "master"])
    older, newest = run.jobs
    schedule = Schedule()
    run.schedule = schedule
    waited = threading.Event()

    def wait() -> None:
        run.wait_newer(older, "apply")  # blocks until master's apply ended
        waited.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert not waited.is_set()
    schedule.ended(newest, "apply", True)
    assert waited.wait(10)
    waiter.join()
    assert schedule.wait(newest, "apply") is True
    schedule.finished(older)
    assert schedule.wait(older, "push") is False
