"""The run journal of each patch set, its lock, and which sets and targets a command names.

The journal is ``.backport/runs/<patch-set>/journal.json``: per target the step reached and its
results. Every change is one named transition checked against `states.MOVES` and rewrites the
file whole (``jsonfile.write_json``: a kill leaves the old or the new journal). Worktrees live
under ``.backport/worktrees/<patch-set>/<target>``, logs under ``.backport/runs/<set>/logs/``.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from backport.codec import decode, encode
from backport.config.model import PatchSet, Project, newest_first
from backport.errors import BackportError, ConfigError, ErrorCode
from backport.git.cache import file_lock
from backport.git.worktree import Worktree
from backport.jsonfile import read_json, write_json
from backport.records import BranchRecord
from backport.states import may_move

JOURNAL_VERSION = 2  # a journal of another version is refused, never rewritten

Transition = Callable[[BranchRecord], BranchRecord]  # one named change of a record


class Journal:
    """The journal of one patch set; thread-safe, persisted after every update."""

    def __init__(self, path: Path, patch_set: str, api: str | None, *, persist: bool = True) -> None:
        self.path = path
        self.persist = persist
        self.patch_set = patch_set
        self.api = api
        self._lock = threading.Lock()
        self._branches: dict[str, BranchRecord] = {}
        self._encoded: dict[str, tuple[BranchRecord, Any]] = {}

    @classmethod
    def load(cls, state_dir: Path, patch_set: str, api: str | None, *, persist: bool = True) -> Journal:
        """Open the journal of ``patch_set`` (an empty one when there is none yet); a file of
        another version, or one that cannot be read, is one clear sentence and left as it is."""
        path = state_dir / "runs" / patch_set / "journal.json"
        journal = cls(path, patch_set, api, persist=persist)
        if not path.exists():
            return journal
        data = read_json(path, what="run journal")
        if not isinstance(data, dict) or not isinstance(data.get("branches"), dict):
            raise BackportError(
                "config", f"{path}: not a backport journal; move it aside to start over")
        version = data.get("version")
        if not isinstance(version, int) or version < JOURNAL_VERSION:
            raise BackportError(
                "config", f"{path}: the run journal is from an older backport (version "
                f"{version}, this one reads {JOURNAL_VERSION}); move it aside to start over")
        if version > JOURNAL_VERSION:
            raise BackportError(
                "config", f"{path}: the run journal was written by a newer backport (version "
                f"{version}, this one reads {JOURNAL_VERSION}); upgrade backport to use it")
        try:
            journal._branches = {str(target): decode(BranchRecord, rec)
                                 for target, rec in data["branches"].items()}
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise BackportError(
                "config", f"{path}: a branch record of the run journal cannot be read ({exc}); "
                f"move it aside to start over") from exc
        return journal

    def record(self, target: str, fork_branch: str) -> BranchRecord:
        """The record of ``target``, created when missing."""
        with self._lock:
            rec = self._branches.get(target) or BranchRecord(target, fork_branch)
            self._branches[target] = rec = rec.with_fork_branch(fork_branch)
            return rec

    def get(self, target: str) -> BranchRecord | None:
        with self._lock:
            return self._branches.get(target)

    def change(self, target: str, transition: Transition) -> BranchRecord:
        """Apply ``transition`` and save; a move `states.MOVES` forbids raises."""
        with self._lock:
            before = self._branches[target]
            rec = transition(before)
            if not may_move(before.status, rec.status):
                raise BackportError(
                    ErrorCode.INTERNAL, f"{self.patch_set} {target}: a step moved the branch "
                    f"from {before.status.value} to {rec.status.value}, which no step may")
            self._branches[target] = rec
            if self.persist:
                try:
                    write_json(self.path, self.to_json())
                except OSError as exc:
                    raise BackportError(
                        "journal", f"cannot write the run journal {self.path}: "
                        f"{exc.strerror or exc}; the previous journal is intact") from exc
            return rec

    def records(self, targets: list[str] | None = None) -> list[BranchRecord]:  # targets' order
        with self._lock:
            names = targets if targets is not None else list(self._branches)
            return [self._branches[t] for t in names if t in self._branches]

    def to_json(self) -> dict[str, Any]:
        return {"version": JOURNAL_VERSION, "patch_set": self.patch_set, "api": self.api,
                "branches": {t: self._encode(t, r) for t, r in self._branches.items()}}

    def _encode(self, target: str, rec: BranchRecord) -> Any:
        """``encode(rec)``, kept while ``rec`` is the one of ``target``."""
        kept = self._encoded.get(target)
        if kept is None or kept[0] is not rec:
            kept = self._encoded[target] = (rec, encode(rec))
        return kept[1]


class ProgressSink(Protocol):
    """Where a run's progress goes: one event per (row, step, detail)."""

    def event(self, target: str, step: str, detail: str = "") -> None: ...


def select_patch_sets(project: Project, names: list[str], every: bool = False) -> list[PatchSet]:
    """The patch sets a command names (``--api``), or all with ``every``."""
    if every:
        for message in project.broken.values():
            raise ConfigError(message)
        if not project.patch_sets:
            raise BackportError("usage", f"no patch sets found under {project.root / 'patches'}; "
                                "make one with `backport new NAME --from REV` or "
                                "`backport new NAME --from-pr N`")
        return list(project.patch_sets.values())
    if not names:
        raise BackportError("usage", "name a patch set with --api NAME (or use --all); "
                            "`backport list` shows them")
    chosen = []
    for name in names:
        if name in project.broken:
            raise ConfigError(project.broken[name])
        if name not in project.patch_sets:
            known = ", ".join(sorted(project.patch_sets)) or "none"
            raise BackportError("usage", f"no patch set '{name}' under {project.root / 'patches'} "
                                f"(known: {known}; `backport list` shows them, `backport new "
                                f"{name} --from REV` makes it)")
        chosen.append(project.patch_sets[name])
    return chosen


def select_targets(patch_sets: list[PatchSet], branches: tuple[str, ...]) -> dict[str, list[str]]:
    """Each patch set's targets, limited to the ``--branch`` values when given."""
    if branches:
        known = {t for ps in patch_sets for t in ps.branches}
        unknown = [b for b in branches if b not in known]
        if unknown:
            targets = ", ".join(newest_first(known))
            names = ", ".join(sorted(ps.name for ps in patch_sets))
            where = (f"patch set {names} (targets: {targets})" if len(patch_sets) == 1 else
                     f"any patch set ({names}; targets: {targets})")
            close = difflib.get_close_matches(unknown[0], sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise BackportError("usage", f"branch '{unknown[0]}' is not a target of {where}{hint}")
    return {ps.name: [t for t in ps.branches if not branches or t in branches]
            for ps in patch_sets}


@contextmanager
def locked_journals(project: Project, patch_sets: list[PatchSet], progress: ProgressSink,
                    *, persist: bool = True) -> Iterator[dict[str, Journal]]:
    """Every set's run lock (waiting for another run; none if not ``persist``), its journal."""
    with ExitStack() as stack:
        for ps in sorted(patch_sets, key=lambda p: p.name) if persist else ():
            waiting = partial(progress.event, ps.name, "waiting", "another backport run holds "
                              "this patch set's lock; waiting for it to finish")
            stack.enter_context(file_lock(project.state_dir / "runs" / ps.name / "lock",
                                          on_wait=waiting))
        yield {ps.name: Journal.load(project.state_dir, ps.name, ps.api, persist=persist)
               for ps in patch_sets}


def recorded_worktree(rec: BranchRecord | None) -> Worktree | None:
    """The record's worktree, opened, while it is still on disk; None when it keeps none."""
    if rec is None or not rec.worktree:
        return None
    path = Path(rec.worktree)
    return Worktree.open(path) if path.exists() else None
