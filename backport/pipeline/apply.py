"""`apply`: fetch, apply, test, push and open the PR of every target branch, in parallel."""

from __future__ import annotations

import difflib
import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from backport.branch_order import newest_first
from backport.config.model import PatchSet, Project
from backport.envs.probe import require_built
from backport.envs.sandbox import refusal_notice
from backport.errors import BackportError, ConfigError, ErrorCode
from backport.git.apply import am_in_progress
from backport.git.cache import RepoCache
from backport.git.locks import file_lock
from backport.pipeline.flow import BranchFlow, RunParts
from backport.pipeline.journal import Journal, atomic_write_text, secure_dir
from backport.pipeline.kept_worktree import kept_worktree
from backport.pipeline.pr_step import refresh_sibling_pr
from backport.pipeline.reach import Need
from backport.pipeline.schedule import Schedule
from backport.pipeline.session import ApplyOptions, Session
from backport.pipeline.shared_results import read_set
from backport.pipeline.source_comment import write_summary
from backport.pipeline.steps import BranchJob, Event
from backport.records import SKIP_DRY_NO_ENVS, BranchRecord
from backport.report.summary import render_markdown
from backport.states import FAILURES, Status


class ProgressSink(Protocol):
    def event(self, target: str, step: str, detail: str = "") -> None: ...


EventFor = Callable[[PatchSet, str], Event]  # the progress event of one (patch set, target)
FORGE_ROW = "forge"  # the progress row of the forge's own waits (the rate limit)


@dataclass
class Outcome:
    """The records of one patch set after a run, in target order."""

    patch_set: PatchSet
    targets: list[str]
    journal: Journal

    @property
    def records(self) -> list[BranchRecord]:
        return self.journal.records(self.targets)

    @property
    def failed(self) -> bool:
        return any(r.status in FAILURES for r in self.records)


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
    """Take every patch set's run lock (waiting for another run to finish), then its journal."""
    with ExitStack() as stack:
        for ps in sorted(patch_sets, key=lambda p: p.name):
            def waiting(name: str = ps.name) -> None:
                progress.event(name, "waiting", "another backport run holds this patch set's "
                               "lock; waiting for it to finish")
            stack.enter_context(run_lock(project, ps.name, waiting))
        yield {ps.name: Journal.load(project.state_dir, ps.name, ps.api, persist=persist)
               for ps in patch_sets}


def run_apply(project: Project, names: list[str], options: ApplyOptions,
              progress: ProgressSink, *, every: bool = False,
              environ: dict[str, str] | None = None,
              plan: Callable[[str], None] | None = None,
              estimate: Callable[[str], None] | None = None) -> list[Outcome]:
    """Run the whole job for the named patch sets; returns their records.

    In a dry run ``plan`` hears of every write not made and ``estimate`` of the forge requests
    and time the run would take."""
    patch_sets = select_patch_sets(project, names, every)
    chosen = select_targets(patch_sets, options.branches)
    session = Session(project, options, environ=environ, plan=plan,
                      notify=functools.partial(progress.event, FORGE_ROW, "rate limit"))
    persist = not options.course.dry_run  # a dry run writes no journal and no report
    if persist:
        secure_dir(project.state_dir)
    def event_for(ps: PatchSet, target: str) -> Event:
        name = f"{ps.name}:{target}" if len(patch_sets) > 1 else target
        return functools.partial(progress.event, name)
    try:
        with locked_journals(project, patch_sets, progress, persist=persist) as journals:
            jobs = []
            for ps in patch_sets:
                for target in chosen[ps.name]:
                    fork_branch = ps.fork_branch(project.branch_map, target)
                    journals[ps.name].record(target, fork_branch)
                    jobs.append(BranchJob(ps, target, fork_branch, journals[ps.name],
                                          event_for(ps, target)))
            outcomes = [Outcome(ps, chosen[ps.name], journals[ps.name]) for ps in patch_sets]
            pending = [job for job in jobs if needs_work(job, options)]
            needs = _run_jobs(session, pending, options, event_for) if pending else []
            if persist:
                for outcome in outcomes:
                    write_report(outcome)
            elif pending and estimate is not None:
                summary = session.remote.request_summary(len(patch_sets))
                if summary:
                    estimate(summary)
                for need in needs:
                    estimate(f"needs what this dry run does not: {need}")
            return outcomes
    finally:
        session.close()


def needs_work(job: BranchJob, options: ApplyOptions) -> bool:
    """False for branches a plain re-run must leave alone."""
    rec = job.record
    if options.forces(job.patch_set.name):
        return True
    if rec.status.final:
        job.event(rec.status.value, "finished earlier; --force redoes it")
        return False
    if rec.status == Status.CONFLICT:
        try:
            worktree = kept_worktree(rec)
            if worktree is not None and am_in_progress(worktree):
                job.event("conflict", f"still waiting for you in {rec.worktree}: "
                          f"resolve, then `backport continue` (or `backport abort`)")
                return False
        except BackportError:
            pass
    return True


def _run_jobs(session: Session, jobs: list[BranchJob], options: ApplyOptions,
              event_for: EventFor) -> list[str]:
    """Run the jobs; returns what the real run needs that a dry run went on without."""
    needs = check_prerequisites(session, jobs)
    if any(need is Need.ENVIRONMENTS for need, _ in needs):  # a dry run tests nothing then
        session.options = options = options.without_tests(SKIP_DRY_NO_ENVS)
    session.follow_token()
    if options.course.pushes:
        session.remote.forge().preflight()  # a bad token stops the run before anything is pushed
    if not options.skip_tests:
        _prewarm(session, jobs)
    bases = fetch_bases(session.cache, jobs)
    pool = ThreadPoolExecutor(max_workers=options.workers, thread_name_prefix="branch")
    try:
        # Newest branch first: its conflict is the one to resolve first, and flows down.
        # Each branch is pushed as soon as it is tested; its PR is opened once the branches
        # before it (target order) had theirs. Bodies written before the other branches
        # finished are refreshed at the end.
        # A batch goes one patch set after another, so its PRs appear as it goes.
        order = newest_first(dict.fromkeys(job.target for job in jobs))
        sets = list(dict.fromkeys(job.patch_set.name for job in jobs))
        # A set only partly run here (`--branch`): its other branches ran elsewhere, and each
        # PR body takes their results from their own PRs.
        partial = frozenset(name for name in sets if set(
            next(j.patch_set for j in jobs if j.patch_set.name == name).branches)
            - {j.target for j in jobs if j.patch_set.name == name})
        flow = BranchFlow(RunParts(session, bases, Schedule(jobs), partial))
        futures = [pool.submit(flow.run, job)
                   for job in sorted(jobs, key=lambda j: (sets.index(j.patch_set.name),
                                                          order.index(j.target)))]
        for future in as_completed(futures):
            future.result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        session.close()  # kills running tests so an interrupt is prompt
        raise
    pool.shutdown(wait=True)
    if options.course.opens_prs and not options.course.dry_run:  # a dry run's PRs are not there
        _refresh_siblings(session, jobs, event_for)
        _write_summaries(session, jobs)
    return [problem.message.rstrip(".") for _, problem in needs]


def check_prerequisites(session: Session,
                        jobs: list[BranchJob]) -> list[tuple[Need, BackportError]]:
    """What the run's reach needs that needs no network to check (`Course.needs`: environments
    built, the forge's token, a fork to push to). A real run missing any stops before any work,
    naming everything missing in one sentence; a dry run goes on and returns them (its end
    names them as what the real run needs)."""
    course = session.options.course
    missing = [(need, problem) for need in course.needs(skip_tests=session.options.skip_tests)
               for problem in _missing(need, session, jobs)]
    if course.dry_run or not missing:
        return missing
    problems = [problem for _, problem in missing]
    if len(problems) == 1:
        raise problems[0]
    parts = [p.message.rstrip(".") for p in problems]
    first = problems[0].code  # each is a configuration or usage error (exit 2)
    lead = "" if len(parts) == 1 else f"{len(parts)} things are missing before the run can start: "
    text = lead + "; and ".join(parts)
    raise BackportError(first, text[0].upper() + text[1:] + ".")


def _missing(need: Need, session: Session, jobs: list[BranchJob]) -> list[BackportError]:
    """What this machine lacks of ``need``, one error each."""
    bm = session.project.branch_map
    if need is Need.ENVIRONMENTS:
        users: dict[str, list[str]] = {}
        for job in jobs:
            users.setdefault(bm.targets[job.target].env, []).append(job.target)
        try:
            require_built({name: bm.environments[name] for name in users}, users)
        except BackportError as exc:
            return [exc]
        return []
    if need is Need.TOKEN:
        return [ConfigError(text) for text in session.remote.missing()]
    if bm.fork or not session.remote.missing():  # set, or the token names it
        return []
    return [ConfigError(f"the fork's name: it follows the token's login ({bm.fork_shown}), "
                        f"or set fork: in {bm.path.name}")]


REFRESH_ROUNDS = 3  # reads of the set's PRs after a run; each further one only after a write


def _refresh_siblings(session: Session, jobs: list[BranchJob], event_for: EventFor) -> None:
    """Re-render every open PR of the patch sets run, so each body is true after the run.

    A body written earlier in the run did not know the PRs created after it; a PR of a branch
    run elsewhere did not know this run's results, nor this run's PR theirs. Each round reads
    the set's open PRs once (their evidence is the results shared between hosts) and updates
    the PRs that are out of date. Where the run did only some branches of a set (the others
    run elsewhere), a round that wrote something is followed by another, so two runs finishing
    at the same moment each see the other's result (at most ``REFRESH_ROUNDS``). PRs that are
    already current are left alone.
    """
    bm = session.project.branch_map
    for name in dict.fromkeys(job.patch_set.name for job in jobs):
        first = next(job for job in jobs if job.patch_set.name == name)
        ps, journal = first.patch_set, first.journal
        ran = frozenset(job.target for job in jobs if job.patch_set.name == name)
        partial = bool(set(ps.branches) - ran)
        rounds = REFRESH_ROUNDS if partial else 1
        for _ in range(rounds):
            try:
                forge = session.remote.forge()
                # A whole-set run's own writes keep the forge's listing current; where other
                # branches run elsewhere, every round reads what they wrote since.
                state = read_set(forge, ps, bm, fresh=partial)
            except BackportError as exc:
                first.event("pr", f"could not read the PRs of {ps.name}: {exc.message}")
                break
            wrote = False
            for target in (t for t in ps.branches if t in state.prs):
                event = event_for(ps, target)
                sibling = BranchJob(ps, target, ps.fork_branch(bm, target), journal, event)
                try:
                    wrote |= refresh_sibling_pr(sibling, forge, session.docs(ps.api), bm,
                                                list(ps.branches), state, ran)
                except BackportError as exc:
                    event("pr", f"could not refresh the PR of {target}: {exc.message}")
            if not wrote:
                break


def _write_summaries(session: Session, jobs: list[BranchJob]) -> None:
    """The summary comment on the source PR of each set made from a PR (best effort)."""
    for name in dict.fromkeys(job.patch_set.name for job in jobs):
        first = next(job for job in jobs if job.patch_set.name == name)
        ps = first.patch_set
        if ps.source is None:
            continue
        ran = frozenset(job.target for job in jobs if job.patch_set.name == name)
        warning = write_summary(session.remote.forge(), ps, session.project.branch_map,
                                first.journal.records(list(ps.branches)), ran)
        if warning:
            first.event("pr", warning)


def _prewarm(session: Session, jobs: list[BranchJob]) -> None:
    """Probe every needed environment and start its warm worker in the background; say once
    when the host refuses the tests' sandbox."""
    notice = refusal_notice()
    if notice and jobs:
        jobs[0].event("sandbox", notice)
    bm = session.project.branch_map
    needed = {(bm.targets[job.target].env, job.patch_set.device) for job in jobs}
    for env_name, device in sorted(needed):
        threading.Thread(target=session.envs.prewarm, args=(bm.environments[env_name], device),
                         name=f"prewarm-{env_name}", daemon=True).start()


def fetch_bases(cache: RepoCache, jobs: list[BranchJob]) -> dict[str, str | BackportError]:
    """Fetch every needed target head into the cache once; per-target errors are kept."""
    targets = sorted({job.target for job in jobs})
    for job in jobs:
        job.event("fetching", job.target)
    url = cache.upstream_url
    try:
        cache.ensure()
        heads = cache.remote_heads(targets)
    except BackportError as exc:
        if exc.code == ErrorCode.UPSTREAM_UNREACHABLE:  # no branch can go on: one sentence, not four
            message, code = exc.message, exc.code
            for job in jobs:
                job.change(lambda r: r.failed(Status.FAILED, message, code))
            raise
        return dict.fromkeys(targets, exc)
    result: dict[str, str | BackportError] = {}
    present = [t for t in targets if heads.get(t)]
    for target in targets:
        if not heads.get(target):
            result[target] = BackportError(
                "branch-missing", f"target branch '{target}' does not exist in {url}")
    if present:
        try:
            result.update(cache.fetch(present))
        except BackportError as exc:
            result.update(dict.fromkeys(present, exc))
    return result


def write_report(outcome: Outcome) -> Path:
    """Write the run report as Markdown next to the journal."""
    path = outcome.journal.run_dir / "report.md"
    atomic_write_text(path, render_markdown(outcome.patch_set.name, outcome.records))
    return path
