"""One patch set's run (`SetRun`), a branch's job in it (`BranchJob`), and `Schedule`: "wait
until that branch's step ended" (an older target's apply waits for the newer ones' where its
own series conflicts; each PR step waits for its branch's push).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from backport.config.model import BranchMap, PatchSet, newer
from backport.errors import BackportError, ErrorCode
from backport.git.cache import RepoCache
from backport.pipeline.journal import Journal, ProgressSink, Transition
from backport.pipeline.session import ApplyOptions, Session
from backport.records import BranchRecord
from backport.states import FAILURES

Event = Callable[[str, str], None]  # (step, detail)


@dataclass
class BranchJob:
    """One (patch set, target branch) pair of a run: its record lives in ``journal``."""

    patch_set: PatchSet
    target: str
    fork_branch: str
    journal: Journal
    event: Event

    @property
    def record(self) -> BranchRecord:
        rec = self.journal.get(self.target)
        assert rec is not None
        return rec

    def change(self, transition: Transition) -> BranchRecord:
        return self.journal.change(self.target, transition)

    def stop(self, transition: Transition) -> None:  # and report the status and message
        rec = self.change(transition)
        self.event(rec.status.value, rec.message)


class Schedule:
    """The steps the branches of one patch set's run have ended."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._ended: dict[tuple[str, str], bool] = {}  # (target, step) -> the branch goes on
        self._finished: set[str] = set()  # targets whose thread is done with every step

    def ended(self, job: BranchJob, step: str, going: bool) -> None:
        """``job``'s ``step`` is over; ``going``: the branch goes on past it."""
        with self._changed:
            self._ended[(job.target, step)] = going
            self._changed.notify_all()

    def finished(self, job: BranchJob) -> None:
        """``job``'s thread is done: a step it did not end is over, the branch not going on."""
        with self._changed:
            self._finished.add(job.target)
            self._changed.notify_all()

    def wait(self, job: BranchJob, step: str) -> bool:
        """Block until ``job``'s ``step`` ended; True when the branch went on past it."""
        key = (job.target, step)
        with self._changed:
            while key not in self._ended and job.target not in self._finished:
                self._changed.wait()
            return self._ended.get(key, False)


@dataclass
class SetRun:
    """One patch set's run; after the run, its records."""

    patch_set: PatchSet
    journal: Journal
    targets: list[str]  # the targets the command chose, in the set's order
    jobs: list[BranchJob]  # of those, the ones with work left, in the set's order
    session: Session
    progress: ProgressSink
    rows_named_by_set: bool = False  # several sets run: a progress row is `<set>:<target>`
    bases: dict[str, str | BackportError] = field(default_factory=dict)  # target -> fetched head
    schedule: Schedule = field(default_factory=Schedule)
    earlier: list[SetRun] = field(default_factory=list)  # the batch's sets run before this one

    @property
    def ran(self) -> frozenset[str]:  # the targets this run works on
        return frozenset(job.target for job in self.jobs)

    @property
    def partial(self) -> bool:  # some of the set's branches run elsewhere
        return bool(set(self.patch_set.branches) - self.ran)

    @property
    def options(self) -> ApplyOptions:
        return self.session.options

    @property
    def branch_map(self) -> BranchMap:
        return self.session.project.branch_map

    @property
    def records(self) -> list[BranchRecord]:  # the chosen targets', in the set's order
        return self.journal.records(self.targets)

    @property
    def failed(self) -> bool:
        return any(r.status in FAILURES for r in self.records)

    def event_for(self, target: str) -> Event:
        row = f"{self.patch_set.name}:{target}" if self.rows_named_by_set else target
        return functools.partial(self.progress.event, row)

    def job_for(self, target: str) -> BranchJob:
        """The job of any target of the set (the sibling refresh reaches those not run here)."""
        for job in self.jobs:
            if job.target == target:
                return job
        return BranchJob(self.patch_set, target, self.patch_set.fork_branch(self.branch_map, target),
                         self.journal, self.event_for(target))

    def wait_newer(self, job: BranchJob, step: str) -> None:
        """Block until every newer target run here ended ``step`` (they start first)."""
        for other in self.jobs:
            if newer(other.target, job.target):
                self.schedule.wait(other, step)


def fetch_bases(cache: RepoCache, targets: list[str]) -> dict[str, str | BackportError]:
    """Fetch every target's head once; a branch the upstream lacks fails alone."""
    try:
        return dict(cache.fetch(targets))
    except BackportError as exc:
        if exc.code != ErrorCode.BRANCH_MISSING:
            raise
    heads = cache.remote_heads(targets)
    result: dict[str, str | BackportError] = {
        target: BackportError("branch-missing", f"target branch '{target}' does not exist in "
                                                f"{cache.upstream_url}")
        for target in targets if not heads.get(target)}
    present = [t for t in targets if heads.get(t)]
    if present:
        result.update(cache.fetch(present))
    return result
