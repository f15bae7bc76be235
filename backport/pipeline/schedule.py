"""When each branch's steps run: an older target's apply waits for the newer ones' of its
patch set, and each patch set's PRs open in target order while its branches finish in any order."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from backport.branch_order import newer
from backport.pipeline.steps import BranchJob


def chain_applies(jobs: list[BranchJob]) -> dict[int, threading.Event]:
    """One event per job, set when its apply step ended; each job's ``await_newer`` waits for
    those of the newer targets of its patch set, so a resolution carried down to v2.12.0 can
    serve v2.11.0 in the same run. Jobs start newest first, so a waiting job never holds a
    worker a newer one needs."""
    applied = {id(job): threading.Event() for job in jobs}
    for job in jobs:
        newer_ones = [applied[id(other)] for other in jobs
                      if other.patch_set.name == job.patch_set.name
                      and newer(other.target, job.target)]
        job.await_newer = functools.partial(_wait_all, newer_ones)
    return applied


def _wait_all(events: list[threading.Event]) -> None:
    for event in events:
        event.wait()


class PrTurns:
    """Opens each patch set's PRs in target order while its branches finish in any order.

    A branch's PR step runs once every earlier target of its patch set had its turn; the
    thread that completes the missing turn runs the steps that were waiting (no thread waits).
    """

    def __init__(self, jobs: list[BranchJob]) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, list[str]] = {}
        for job in jobs:
            self._queues.setdefault(job.patch_set.name, [])
        for name, queue in self._queues.items():
            ps = next(job.patch_set for job in jobs if job.patch_set.name == name)
            mine = {job.target for job in jobs if job.patch_set.name == name}
            queue.extend(t for t in ps.branches if t in mine)
        self._ready: dict[tuple[str, str], Callable[[], None] | None] = {}
        self._draining = False

    def done(self, job: BranchJob, pr: Callable[[], None] | None) -> None:
        """``job`` is pushed (or will get no PR: ``pr`` None); run every PR step now due."""
        with self._lock:
            self._ready[(job.patch_set.name, job.target)] = pr
            if self._draining:
                return  # the draining thread will take it
            self._draining = True
        while True:
            with self._lock:
                due = self._next()
                if due is None:
                    self._draining = False
                    return
            if due[0] is not None:
                due[0]()

    def _next(self) -> tuple[Callable[[], None] | None] | None:
        """The next due turn, holding its PR step (None: that branch gets no PR); None: none due."""
        for name, queue in self._queues.items():
            if queue and (name, queue[0]) in self._ready:
                return (self._ready.pop((name, queue.pop(0))),)
        return None
