"""One patch set's run: the set, its journal, the targets chosen, the jobs that run here.

Computed once per set and handed to every step as ``run`` (each step is ``step(run, job)``):
which branches run here (`ran`), whether the set is only partly run here (`partial`: its
other branches run elsewhere, and their results are read from their own PRs), and the parts
the run shares (`session`, the fetched `bases`, the set's `schedule`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from backport.branch_order import newer
from backport.config.model import BranchMap, PatchSet
from backport.errors import BackportError
from backport.pipeline.job import BranchJob, Event, ProgressSink
from backport.pipeline.journal import Journal
from backport.pipeline.schedule import Schedule
from backport.pipeline.session import ApplyOptions, Session
from backport.records import BranchRecord
from backport.states import FAILURES


@dataclass
class SetRun:
    """One patch set's run (see the module docstring); after the run, its records."""

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
    def ran(self) -> frozenset[str]:
        """The targets this run works on."""
        return frozenset(job.target for job in self.jobs)

    @property
    def partial(self) -> bool:
        """True when some of the set's branches are not run here (they run elsewhere)."""
        return bool(set(self.patch_set.branches) - self.ran)

    @property
    def options(self) -> ApplyOptions:
        return self.session.options

    @property
    def branch_map(self) -> BranchMap:
        return self.session.project.branch_map

    @property
    def records(self) -> list[BranchRecord]:
        """The chosen targets' records, in the set's order."""
        return self.journal.records(self.targets)

    @property
    def failed(self) -> bool:
        return any(r.status in FAILURES for r in self.records)

    def event_for(self, target: str) -> Event:
        """The progress event of one target of the set."""
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
        """Block until every newer target of the set run here ended ``step``. Branches start
        newest first, so a waiting branch never holds a worker a newer one needs."""
        for other in self.jobs:
            if newer(other.target, job.target):
                self.schedule.wait(other, step)
