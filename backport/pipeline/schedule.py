"""When each branch's steps run: an older target's apply waits for the newer ones' of its
patch set, and each patch set's PRs open in target order while its branches finish in any order.

The schedule is told of jobs and step names only (never handed a function): the flow asks it
to wait, tells it a step ended, and asks which jobs' turn has come.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from backport.branch_order import newer

if TYPE_CHECKING:
    from backport.pipeline.steps import BranchJob


class Schedule:
    """The order between the branches of one run (see the module docstring)."""

    def __init__(self, jobs: list[BranchJob]) -> None:
        self._jobs = list(jobs)
        self._lock = threading.Lock()
        self._ended: dict[tuple[int, str], threading.Event] = {}
        self._queues: dict[tuple[str, str], list[str]] = {}  # (set, step) -> targets in order
        self._arrived: dict[tuple[str, str, str], tuple[BranchJob, bool]] = {}
        self._draining: set[str] = set()

    # -- a step that waits for the newer targets' same step (apply) ----------------------
    def ended(self, job: BranchJob, step: str) -> None:
        """``job``'s ``step`` is over (it ran, stopped, failed or was not needed)."""
        self._event(job, step).set()

    def wait_newer(self, job: BranchJob, step: str) -> None:
        """Block until every newer target of ``job``'s patch set ended ``step``. Jobs start
        newest first, so a waiting job never holds a worker a newer one needs."""
        for other in self._jobs:
            if other.patch_set.name == job.patch_set.name and newer(other.target, job.target):
                self._event(other, step).wait()

    def _event(self, job: BranchJob, step: str) -> threading.Event:
        with self._lock:
            return self._ended.setdefault((id(job), step), threading.Event())

    # -- a step taken in target order (pr) -----------------------------------------------
    def arrive(self, job: BranchJob, step: str, going: bool) -> bool:
        """``job`` reached ``step`` (``going``: it still runs it). True when this thread is
        to run the turns now due (`next_due` until None); False when another thread does."""
        with self._lock:
            self._arrived[(job.patch_set.name, job.target, step)] = (job, going)
            if step in self._draining:
                return False
            self._draining.add(step)
            return True

    def next_due(self, step: str) -> tuple[BranchJob, bool] | None:
        """The next job whose turn of ``step`` has come (every earlier target of its patch
        set had its turn), with its ``going``; None when none is due (draining stops)."""
        with self._lock:
            for job in self._jobs:
                queue = self._queue(job.patch_set.name, step)
                key = (job.patch_set.name, queue[0], step) if queue else None
                if key is not None and key in self._arrived:
                    queue.pop(0)
                    return self._arrived.pop(key)
            self._draining.discard(step)
            return None

    def _queue(self, patch_set: str, step: str) -> list[str]:
        key = (patch_set, step)
        if key not in self._queues:
            ps = next(job.patch_set for job in self._jobs if job.patch_set.name == patch_set)
            mine = {job.target for job in self._jobs if job.patch_set.name == patch_set}
            self._queues[key] = [t for t in ps.branches if t in mine]
        return self._queues[key]
