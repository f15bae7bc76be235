"""The test step's view of what a series changes beyond its tests.

A branch environment runs the released torch_npu wheel. Before the tests run, the commit's
files outside ``test/`` are sorted (``envs/overlay.py``): the ``torch_npu`` Python files are
laid over a copy of the installed package that the runs import instead (``envs/overlay.py``);
compiled sources and build inputs are named as not in the build; the rest as not exercised.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from backport.config.model import Environment
from backport.envs.model import ChangeScope
from backport.envs.overlay import OverlayError, overlay_paths, scope_of
from backport.git.run import changed_paths, read_blob

if TYPE_CHECKING:
    from backport.envs.environments import Environments
    from backport.pipeline.job import BranchJob


def series_paths(job: BranchJob, worktree: Path) -> dict[str, bool]:
    """The paths the branch's commit changes on its base -> whether the commit keeps them;
    the series' own paths where the record names no base."""
    rec = job.record
    if rec.base and rec.commit:
        return changed_paths(worktree, rec.base, rec.commit)
    return {path: True for patch in job.patch_set.series_for(job.target) for path in patch.paths}


def changes_for_run(job: BranchJob, envs: Environments, env: Environment,
                    worktree: Path) -> tuple[ChangeScope, Path | None]:
    """The series' scope beyond tests, and the folder to put first on the tests' path (None:
    the tests run against the installed package as it is)."""
    paths = series_paths(job, worktree)
    wanted = overlay_paths(paths)
    if not wanted:
        return scope_of(paths), None
    commit = job.record.commit or "HEAD"
    files = {path: read_blob(worktree, f"{commit}:{path}") if paths[path] else None for path in wanted}
    try:
        overlay = envs.overlay(env, files)
    except OverlayError as exc:
        job.event("overlay", f"{exc}; the torch_npu files the series changes are not in the "
                             f"build the tests run on")
        return scope_of(paths, overlaid=False), None
    how = "reused the copy" if overlay.reused else "copied"
    job.event("overlay", f"{how} of the installed torch_npu with the branch's "
                         f"{', '.join(overlay.files)}")
    return scope_of(paths), overlay.root
