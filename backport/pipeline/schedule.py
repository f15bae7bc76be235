"""When a branch's step may run: one protocol, "wait until that branch's step ended".

A branch thread tells the schedule each step it ended (and whether the branch goes on); a
step that depends on another branch waits for that branch's step by name. Two waits use it:
an older target's apply, where its own series conflicts, waits for the newer targets' apply
of the set (their resolutions are what it tries next; `SetRun.wait_newer`); and the set's PR steps, taken one
after another in target order by the set's own thread, each wait for its branch's push. The
schedule is told of jobs and step names only, never handed a function.
"""

from __future__ import annotations

import threading

from backport.pipeline.job import BranchJob


class Schedule:
    """The steps the branches of one patch set's run have ended (see the module docstring)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._ended: dict[tuple[str, str], bool] = {}  # (target, step) -> the branch goes on
        self._finished: set[str] = set()  # targets whose thread is done with every step

    def ended(self, job: BranchJob, step: str, going: bool) -> None:
        """``job``'s ``step`` is over (it ran, stopped, failed or was not needed); ``going``:
        the branch goes on past it."""
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
