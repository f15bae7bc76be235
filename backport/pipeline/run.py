"""`apply`'s run: prerequisites, one fetch of every target, then one patch set after another.

Each set (`run_set`) goes in four phases: **branches**, each branch's steps on a worker thread,
newest target first (`run_branch`); **PRs**, the set's PR steps in target order on the set's own
thread, each once its branch was pushed (`take_turns`); **refresh**, every open PR of the set
re-rendered with what is true now (`refresh_siblings`); **summary**, the comment on the source
PR of a set made from one. A plain re-run leaves finished branches, and a conflict still
waiting for the user, alone unless ``--force`` (`needs_work`). `STEPS` is a branch's whole
order, proposed → apply → same_fix → test → push → pr, each ``step(run, job) -> bool`` (True:
the branch goes on) with its guard; an error stops its branch only, with one redacted sentence
in its record. A new step is one entry there, its function, its states and moves
(`states.py`) and its report (`report/`).
"""

from __future__ import annotations

import functools
import os
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from backport.config.model import PatchSet, Project, newest_first
from backport.envs.probe import require_built
from backport.envs.sandbox import refusal_notice, require_isolation
from backport.errors import BackportError, ConfigError, ErrorCode, ForkDiverged
from backport.git.apply import am_in_progress
from backport.jsonfile import secure_dir, write_text
from backport.pipeline.journal import (
    Journal,
    ProgressSink,
    locked_journals,
    recorded_worktree,
    select_patch_sets,
    select_targets,
)
from backport.pipeline.pr_step import pr_step, read_set, refresh_sibling_pr, write_source_summary
from backport.pipeline.proposed import proposed_step, same_fix_step
from backport.pipeline.session import (
    ApplyOptions,
    BranchJob,
    Prerequisite,
    Session,
    SetRun,
    fetch_bases,
)
from backport.pipeline.steps import apply_step, push_step, test_step
from backport.records import SKIP_DRY_NO_ENVS, BranchRecord
from backport.redact import redact
from backport.states import Status


def run_apply(project: Project, names: list[str], options: ApplyOptions,
              progress: ProgressSink, *, every: bool = False,
              estimate: Callable[[str], None] | None = None,
              session: Session | None = None) -> list[SetRun]:
    """Run the named patch sets; a dry run tells the session's ``plan`` each write and
    ``estimate`` the cost."""
    patch_sets = select_patch_sets(project, names, every)
    chosen = select_targets(patch_sets, options.branches)
    session = session or Session(project, options)
    session.project, session.options = project, options
    session.notify = functools.partial(progress.event, "forge", "rate limit")
    session.start()
    persist = not options.mode.dry_run  # a dry run writes no journal and no report
    if persist:
        secure_dir(project.state_dir)
    try:
        with locked_journals(project, patch_sets, progress, persist=persist) as journals:
            runs = [_set_run(session, ps, journals[ps.name], chosen[ps.name], progress,
                             several=len(patch_sets) > 1) for ps in patch_sets]
            pending = [run for run in runs if run.jobs]
            needs = _run_sets(session, pending) if pending else []
            if persist:
                from backport.report.summary import render_markdown  # a dry run writes no report

                for run in runs:
                    write_text(run.journal.path.parent / "report.md",
                               render_markdown(run.patch_set.name, run.records))
            elif pending and estimate is not None:
                if summary := session.forge.request_summary(len(patch_sets)):
                    estimate(summary)
                for need in needs:
                    estimate(f"needs what this dry run does not: {need}")
            return runs
    finally:
        session.close()


def _set_run(session: Session, ps: PatchSet, journal: Journal, targets: list[str],
             progress: ProgressSink, *, several: bool) -> SetRun:
    """One set's run: a record for every chosen target, a job for each with work left."""
    run = SetRun(ps, journal, targets, [], session, progress, rows_named_by_set=several)
    for target in targets:
        fork_branch = ps.fork_branch(session.project.branch_map, target)
        journal.record(target, fork_branch)
        job = BranchJob(ps, target, fork_branch, journal, run.event_for(target))
        if needs_work(job, session.options):
            run.jobs.append(job)
    return run


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
            worktree = recorded_worktree(rec)
            if worktree is not None and am_in_progress(worktree):
                job.event("conflict", f"still waiting for you in {rec.worktree}: "
                          f"resolve, then `backport continue` (or `backport abort`)")
                return False
        except BackportError:
            pass
    return True


def _run_sets(session: Session, runs: list[SetRun]) -> list[str]:
    """Run the sets one after another; returns what a dry run went on without."""
    jobs = [job for run in runs for job in run.jobs]
    needs = check_prerequisites(session, jobs)
    if any(need is Prerequisite.ENVIRONMENTS for need, _ in needs):  # a dry run tests nothing then
        session.options = replace(session.options, skip_tests=True, skip_cause=SKIP_DRY_NO_ENVS)
    pr_targets = [job.target for job in jobs if job.patch_set.pr_code]
    if pr_targets and not session.options.skip_tests:  # a PR's code is tested only confined
        require_isolation(session.project.branch_map, dict.fromkeys(pr_targets))
    session.follow_token()
    if session.options.mode.pushes:
        session.forge.client().preflight()  # a bad token stops the run before any push
    if not session.options.skip_tests:
        _prewarm(session, jobs)
    for job in jobs:
        job.event("fetching", job.target)
    bases = fetch_bases(session.cache, sorted({job.target for job in jobs}))
    jobs_at_once = session.options.jobs or os.cpu_count() or 2  # 0: one per CPU
    pool = ThreadPoolExecutor(max_workers=jobs_at_once, thread_name_prefix="branch")
    try:
        for index, run in enumerate(runs):
            run.bases, run.earlier = bases, runs[:index]  # one PR per fix: `same_fix_step`
            run_set(run, pool)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        session.close()  # kills running tests so an interrupt is prompt
        raise
    pool.shutdown(wait=True)
    return [problem.message.rstrip(".") for _, problem in needs]


def run_set(run: SetRun, pool: ThreadPoolExecutor) -> None:
    """One patch set's run, phase by phase; newest branch first, as its resolution flows down."""
    order = newest_first(run.ran)
    branches = [pool.submit(run_branch, run, job)
                for job in sorted(run.jobs, key=lambda j: order.index(j.target))]
    take_turns(run)
    for branch in branches:
        branch.result()
    if run.options.mode.opens_prs and not run.options.mode.dry_run:
        refresh_siblings(run)
        ps = run.patch_set  # the summary of a set made from a PR
        warning = write_source_summary(run.session.forge.client(), ps, run.branch_map,
                                       run.journal.records(list(ps.branches)), run.ran)
        if warning:
            run.jobs[0].event("pr", warning)


def check_prerequisites(session: Session,
                        jobs: list[BranchJob]) -> list[tuple[Prerequisite, BackportError]]:
    """What the mode needs and lacks: a real run stops naming all; a dry run returns them."""
    mode, bm = session.options.mode, session.project.branch_map
    missing: list[tuple[Prerequisite, BackportError]] = []
    for need in mode.prerequisites(skip_tests=session.options.skip_tests):
        if need is Prerequisite.ENVIRONMENTS:
            users: dict[str, list[str]] = {}
            for job in jobs:
                users.setdefault(bm.targets[job.target].env, []).append(job.target)
            try:
                require_built({name: bm.environments[name] for name in users}, users)
            except BackportError as exc:
                missing.append((need, exc))
        elif need is Prerequisite.TOKEN:
            missing += [(need, ConfigError(text)) for text in session.forge.real().missing()]
        elif not bm.fork and session.forge.real().missing():  # else set, or the token names it
            missing.append((need, ConfigError(
                f"the fork's name: it follows the token's login ({bm.fork_shown}), or set "
                f"fork: in {bm.path.name}")))
    if mode.dry_run or not missing:
        return missing
    if len(missing) == 1:
        raise missing[0][1]
    parts = "; and ".join(problem.message.rstrip(".") for _, problem in missing)
    raise BackportError(missing[0][1].code,
                        f"{len(missing)} things are missing before the run can start: {parts}.")


def refresh_siblings(run: SetRun) -> None:
    """Re-render every open PR of the set; in a partial run a round that wrote is followed by
    another, so two runs ending at once each see the other's result."""
    ps, bm = run.patch_set, run.branch_map
    for _ in range(3 if run.partial else 1):  # at most 3 rounds
        try:
            forge = run.session.forge.client()
            state = read_set(forge, ps, bm)  # what others (maintainers, hosts) wrote since
        except BackportError as exc:
            run.jobs[0].event("pr", f"could not read the PRs of {ps.name}: {exc.message}")
            return
        wrote = False
        for target in (t for t in ps.branches if t in state.prs):
            sibling = run.job_for(target)
            try:
                wrote |= refresh_sibling_pr(sibling, forge, run.session.docs(ps.api), bm,
                                            list(ps.branches), state, run.ran)
            except BackportError as exc:
                sibling.event("pr", f"could not refresh the PR of {target}: {exc.message}")
        if not wrote:
            return


def _prewarm(session: Session, jobs: list[BranchJob]) -> None:
    """Probe each needed environment and start its warm worker in the background."""
    notice = refusal_notice()
    if notice and jobs:
        jobs[0].event("sandbox", notice)
    bm = session.project.branch_map
    needed = {(bm.targets[job.target].env, job.patch_set.device) for job in jobs}
    for env_name, device in sorted(needed):
        threading.Thread(target=session.envs.prewarm, args=(bm.environments[env_name], device),
                         name=f"prewarm-{env_name}", daemon=True).start()


@dataclass(frozen=True)
class Step:
    """One step; ``in_turn``: run in target order; ``after_stop``: its guard alone decides."""

    name: str
    needed: Callable[[BranchRecord, ApplyOptions], bool]
    run: Callable[[SetRun, BranchJob], bool]
    in_turn: bool = False
    after_stop: bool = False


def always(rec: BranchRecord, options: ApplyOptions) -> bool:
    return True


def publishable(rec: BranchRecord, options: ApplyOptions) -> bool:
    """Tested, or failed with --pr-on-failure, in a run that pushes."""
    eligible = rec.status in (Status.TESTED, Status.PUSHED) or (
        rec.status == Status.TEST_FAILED and options.pr_on_failure and rec.commit is not None)
    return eligible and options.mode.pushes


STEPS: tuple[Step, ...] = (
    Step("proposed", always, proposed_step),
    Step("apply", always, apply_step),
    Step("same_fix", always, same_fix_step),
    Step("test", always, test_step),
    Step("push", publishable, push_step, after_stop=True),
    Step("pr", lambda rec, options: options.mode.opens_prs, pr_step, in_turn=True),
)


def run_branch(run: SetRun, job: BranchJob, steps: tuple[Step, ...] = STEPS) -> None:
    """``job``'s steps before the first that runs in turn; the schedule hears each one's end."""
    going = True
    try:
        for step in steps:
            if step.in_turn:
                break
            going = take(run, job, step, going)
            run.schedule.ended(job, step.name, going)
    finally:
        run.schedule.finished(job)


def take_turns(run: SetRun, steps: tuple[Step, ...] = STEPS) -> None:
    """The steps that run in turn, job by job, each once its branch ended the step before."""
    first = next(i for i, step in enumerate(steps) if step.in_turn)  # never the first step
    for job in run.jobs:
        going = run.schedule.wait(job, steps[first - 1].name)
        for step in steps[first:]:
            going = take(run, job, step, going)


def take(run: SetRun, job: BranchJob, step: Step, going: bool) -> bool:
    """Run ``step`` where the branch goes on (or it runs after a stop) and its guard says so."""
    return (going or step.after_stop) and step.needed(job.record, run.options) and guarded(
        run, job, step)


def guarded(run: SetRun, job: BranchJob, step: Step) -> bool:
    """Run one step; any error fails this branch only, with one sentence in the journal."""
    try:
        return step.run(run, job)
    except BackportError as exc:
        message, code = redact(exc.message), exc.code
        if isinstance(exc, ForkDiverged):
            remote = exc.remote
            job.stop(lambda r: r.fork_diverged(message, remote, code))
        else:
            job.stop(lambda r: r.failed(Status.FAILED, message, code))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - a bug must not take the other branches down
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        message = redact(f"internal error on {job.target}: {detail}")
        job.stop(lambda r: r.failed(Status.FAILED, message, ErrorCode.INTERNAL))
    return False
