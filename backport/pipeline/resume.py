"""`continue` after a conflict was resolved by hand, and `abort`.

`continue` concludes `git am` once the resolution leaves every test file compiling, then names
the other branches the resolution may serve, which `apply` runs next. `abort` stops `git am`,
removes worktrees and resets the records; the fork branch and the PR are left alone.
"""

from __future__ import annotations

from pathlib import Path

from backport.config.model import Project, nearest_first
from backport.errors import BackportError
from backport.git.apply import abort_series, am_in_progress, continue_series, has_markers, snapshot
from backport.git.patch_export import export_patch_set
from backport.git.python_tests import changed_python_tests, source_problems
from backport.git.worktree import Worktree
from backport.pipeline.journal import (
    ProgressSink,
    locked_journals,
    recorded_worktree,
    select_patch_sets,
    select_targets,
)
from backport.records import BranchRecord
from backport.states import Status


def finish_conflict(project: Project, name: str, target: str, progress: ProgressSink,
                    *, save: bool = False) -> str:
    """Conclude `git am` in the kept worktree; returns the new commit. Raises when it cannot."""
    (patch_set,) = select_patch_sets(project, [name])
    select_targets([patch_set], (target,))  # "not a target of patch set …" before "never run"
    with locked_journals(project, [patch_set], progress) as journals:
        journal = journals[name]
        rec = journal.get(target)
        if rec is None or rec.status != Status.CONFLICT:
            state = rec.status.value if rec else "never run"
            raise BackportError("usage", f"branch '{target}' of patch set '{name}' has no conflict "
                                f"to continue (status: {state})")
        path = Path(rec.worktree or "")
        worktree = recorded_worktree(rec)
        if worktree is None:
            raise BackportError("usage", f"the worktree {path} of branch '{target}' is gone; run "
                                f"`backport abort --api {name} --branch {target}` and apply again")
        problems = source_problems(path, rec.base or "HEAD", path, changed_python_tests(
            patch_set.series_for(target), [t.path for t in patch_set.tests]))
        if problems:
            raise BackportError("conflict", f"{target}: the resolution in {path} leaves "
                                f"{'; '.join(problems)}; fix it, then run `backport continue` "
                                f"again")
        result = continue_series(worktree)
        if result.status != "applied":
            journal.change(target, lambda r: r.still_conflicted(result.conflicts, result.message))
            raise BackportError("conflict", f"{target}: {result.message}")
        journal.change(target, lambda r: r.resolved_by_hand(result.head,
                                                            "conflict resolved by hand"))
        progress.event(target, "applied", f"{result.head[:9]} (resolved by hand)")
        if save:
            out = patch_set.dir / target
            files = export_patch_set(path, f"{rec.base}..{result.head}", out, force=True)
            progress.event(target, "saved", f"{len(files)} patch(es) as the variant in {out}")
        return result.head


def _untouched(worktree: Worktree, rec: BranchRecord) -> bool:
    """True when no one has started resolving: the conflicting files are as `git am` left them."""
    files = list(rec.conflicts)
    if not files:
        return False
    left = rec.conflict_snapshot
    if left is not None and set(left) == set(files):
        return snapshot(worktree, files) == left
    return all(worktree.git(["diff", "--quiet", "HEAD", "--", name], check=False).ok
               or has_markers(worktree.path / name) for name in files)


def propagation_targets(project: Project, name: str, target: str,
                        progress: ProgressSink) -> list[str]:
    """The branches not applied yet or with an untouched conflict (stopped), nearest first."""
    (patch_set,) = select_patch_sets(project, [name])
    with locked_journals(project, [patch_set], progress) as journals:
        journal = journals[name]
        chosen = []
        for other in nearest_first(target, patch_set.branches):
            rec = journal.get(other)
            status = rec.status if rec else Status.PENDING
            if status not in (Status.PENDING, Status.CONFLICT):
                continue
            worktree = recorded_worktree(rec) if status == Status.CONFLICT else None
            if rec is not None and worktree is not None and am_in_progress(worktree):
                if not _untouched(worktree, rec):
                    progress.event(other, "conflict", "left alone: its conflict is being "
                                   "resolved by hand")
                    continue
                abort_series(worktree)
            chosen.append(other)
        return chosen


def abort_branches(project: Project, name: str, targets: tuple[str, ...],
                   progress: ProgressSink) -> list[str]:
    """Stop `git am`, remove worktrees, reset the records (keeping what was last pushed)."""
    (patch_set,) = select_patch_sets(project, [name])
    select_targets([patch_set], targets)
    with locked_journals(project, [patch_set], progress) as journals:
        journal = journals[name]
        chosen = list(targets) or [r.target for r in journal.records()]
        for target in chosen:
            if journal.get(target) is None:
                raise BackportError("usage", f"branch '{target}' of patch set '{name}' has no state "
                                    f"to abort")
        for rec in journal.records(chosen):
            worktree = recorded_worktree(rec)
            if worktree is not None:
                if am_in_progress(worktree):
                    abort_series(worktree)
                worktree.remove()
            journal.change(rec.target, lambda r: r.aborted("aborted; the next apply starts over"))
            progress.event(rec.target, "aborted", "worktree removed; fork branch and PR untouched")
        return chosen
