"""Which patch sets and targets a command names, and the locks that keep two runs apart."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from backport.branch_order import newest_first
from backport.config.model import PatchSet, Project
from backport.errors import BackportError, ConfigError
from backport.git.cache import file_lock
from backport.pipeline.job import ProgressSink
from backport.pipeline.journal import Journal


def select_patch_sets(project: Project, names: list[str], every: bool = False) -> list[PatchSet]:
    """The patch sets a command names (``--api``, repeatable), or all of them with ``every``.

    A named set that did not load (and with ``every``, any such set) fails with its own
    sentence (ConfigError); the others' problems do not matter here.
    """
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


def run_lock(project: Project, patch_set: str, on_wait: Callable[[], None] | None,
             *, wait: bool = True):
    """The lock that keeps two runs on one patch set from interleaving."""
    return file_lock(project.state_dir / "runs" / patch_set / "lock", wait=wait, on_wait=on_wait)


@contextmanager
def locked_journals(project: Project, patch_sets: list[PatchSet], progress: ProgressSink,
                    *, persist: bool = True) -> Iterator[dict[str, Journal]]:
    """Take every patch set's run lock (waiting for another run to finish), then its journal.
    Without ``persist`` (a dry run, which writes no journal) no lock is taken: it writes
    nothing in the project."""
    with ExitStack() as stack:
        for ps in sorted(patch_sets, key=lambda p: p.name) if persist else ():
            def waiting(name: str = ps.name) -> None:
                progress.event(name, "waiting", "another backport run holds this patch set's "
                               "lock; waiting for it to finish")
            stack.enter_context(run_lock(project, ps.name, waiting))
        yield {ps.name: Journal.load(project.state_dir, ps.name, ps.api, persist=persist)
               for ps in patch_sets}
