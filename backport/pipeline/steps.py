"""The apply, test and push steps: each reads and writes one journal record, safe to repeat.

Re-runs: apply keeps the commit when the base did not move (or it was made by hand) and the
cache holds it; test keeps a passing result of the same commit; push does nothing when the fork
branch is at the commit and stops (`fork-diverged`) when someone else moved it. A publish step
(``--skip-tests``) pushes a tested commit only when its tree is the series applied afresh on
its base, read from the cache's objects, never from the worktree the tests could write. The
``torch_npu`` files the commit changes are laid over a copy of the installed package
(``envs/overlay.py``); each test the patch adds must pass in its file's ``-v`` output.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backport.config.model import BranchMap, Environment, PatchSet
from backport.envs.model import ChangeScope, Probe
from backport.envs.overlay import OverlayError, overlay_paths, scope_of
from backport.envs.probe import device_verdict, pin_mismatches
from backport.envs.summary import outcomes_of
from backport.errors import BackportError, ErrorCode
from backport.git.apply import am_in_progress, commit_tree, series_tree, snapshot
from backport.git.cache import RepoCache
from backport.git.python_tests import AddedTest, with_classes
from backport.git.run import changed_paths, read_blob, token_git
from backport.git.worktree import Worktree, cache_branch
from backport.jsonfile import secure_dir, write_text
from backport.pipeline.decide import Decision, SiblingSeries, Verdict, decide, sibling_series
from backport.pipeline.session import BranchJob, SetRun
from backport.records import SKIP_CAUSE_TEXT, SKIP_NO_TESTS, BranchRecord, EnvEvidence, TestResult
from backport.report.wording import exit_stated
from backport.states import Status

if TYPE_CHECKING:
    from backport.envs.environments import Environments


def log_path(run: SetRun, job: BranchJob, test_index: int) -> Path:
    suffix = f".{test_index}" if test_index else ""
    safe = job.target.replace("/", "_")
    return secure_dir(run.session.run_dir(job.patch_set.name) / "logs") / f"{safe}{suffix}.log"


def apply_step(run: SetRun, job: BranchJob) -> bool:
    """Put the series on a fresh fork branch on the fetched base; False when it stopped."""
    base = run.bases[job.target]
    if isinstance(base, BackportError):
        raise base
    job.change(BranchRecord.error_cleared)
    cache, work_dir = run.session.cache, run.session.work_dir
    rec = job.record
    path = work_dir / "worktrees" / job.patch_set.name / job.target  # a dry run's: temporary
    series = job.patch_set.series_for(job.target)
    same_base = rec.base == base or rec.manual  # a hand-made fix survives a moved base
    if (rec.commit and same_base and path.exists() and not run.options.forces(job.patch_set.name)
            and rec.status not in (Status.PENDING, Status.CONFLICT)
            and _keeps_commit(run, job, path)):
        return True
    job.event("apply", f"{len(series)} patch(es) on {job.target} @ {base[:9]}")
    decision = decide(
        cache, base, series, [t.path for t in job.patch_set.tests],
        worktree=lambda: Worktree.create(cache, path, cache_branch(work_dir, job.fork_branch),
                                         base, job.patch_set.paths_for(job.target)),
        others=lambda: _other_series(run, job), event=lambda detail: job.event("apply", detail))
    return _record_decision(job, base, path, decision)


def _keeps_commit(run: SetRun, job: BranchJob, path: Path) -> bool:
    """The previous run's commit goes on: the cache holds it (and the worktree, for a test)."""
    cache, rec = run.session.cache, job.record
    commit = rec.commit
    assert commit is not None
    if run.options.skip_tests or bool(rec.test and rec.test.ok and rec.test.commit == commit):
        # read sealed: the step may hold the token
        here = token_git(["cat-file", "-e", f"{commit}^{{commit}}"], repo=cache.path,
                         urls=(cache.url,), check=False).ok
    else:
        try:
            wt = Worktree.open(path)
            if wt.head() != commit or am_in_progress(wt):
                return False
            here = wt.repo.resolve().samefile(cache.path.resolve())
        except BackportError:
            return False
        except OSError:
            here = False
    if here:
        job.event("apply", f"kept {commit[:9]} from the previous run")
    else:
        job.event("apply", f"the previous run's commit {commit[:9]} is not in this run's cache "
                  "repository (the cache folder was moved, cleared or is another one): "
                  "applying again")
    return here


def _record_decision(job: BranchJob, base: str, path: Path, decision: Decision) -> bool:
    """The journal's transitions for what `decide` found; False when the branch stopped."""
    if decision.verdict is Verdict.ALREADY_APPLIED:
        job.change(lambda r: r.already_upstream(
            base, f"the patch is already on {job.target} (same patch-id); no PR needed"))
        job.event("already-applied", "same patch-id upstream")
        return False
    job.change(lambda r: r.tests_found([t.node_id for t in decision.added], decision.present))
    if decision.verdict is Verdict.ALREADY_PRESENT:
        job.change(lambda r: r.already_present(
            base, f"every test the patch adds is already on {job.target}: "
                  f"{decision.present_said}; no PR needed"))
        job.event("already-present", decision.present_said)
        return False
    for test in decision.present:
        job.event("apply", f"already on {job.target}: {test.describe()}")
    if decision.verdict is not Verdict.APPLIED:
        _record_stop(job, base, path, decision)
        return False
    wt, result, source = decision.worktree, decision.result, decision.source
    assert wt is not None and result is not None
    added = with_classes(wt.path, base, result.head, decision.added, wt.memo.reader(wt.path))
    job.change(lambda r: r.applied(
        base, result.head, str(path), [t.node_id for t in added],
        series_source=source.source if source else None, tried_sources=decision.tried,
        merged_files=result.merged, loose_files=result.context_ignored))
    job.event("applied", result.head[:9] + (f" from {source.source.label}" if source else ""))
    for files, how in ((result.merged, "only through a 3-way merge"),
                       (result.context_ignored, "with context lines ignored")):
        if files:
            job.event("apply", f"{', '.join(files)} went in {how}; compare it with the newer "
                      "branches")
    return True


def _record_stop(job: BranchJob, base: str, path: Path, decision: Decision) -> None:
    """A series that made no change, conflicted, or left an unusable test file."""
    wt, result, source, tried = decision.worktree, decision.result, decision.source, decision.tried
    assert wt is not None and result is not None
    if decision.verdict is Verdict.NO_CHANGE:
        wt.remove()
        job.change(lambda r: r.no_change(
            base, f"the patch makes no change on {job.target}; no PR needed"))
        job.event("already-applied", "no change")
    elif decision.verdict is Verdict.CONFLICT:
        still = f"; {', '.join(tried)} still conflict{'s' if len(tried) == 1 else ''}" if tried else ""
        message = (f"{result.message}{still}; resolve it in {path}, then run `backport "
                   f"continue --api {job.patch_set.name} --branch {job.target}` (or `backport "
                   f"abort`)")
        left = snapshot(wt, result.conflicts)
        job.stop(lambda r: r.conflicted(base, message, result.conflicts, str(path), tried,
                                        left))
        job.event("conflict", ", ".join(result.conflicts) or "unknown files")
    else:
        message = (f"with the series applied on {job.target}, {'; '.join(decision.problems)}; "
                   f"nothing was pushed: change the patch (its commit is kept in {path} to look at)")
        job.stop(lambda r: r.unusable(
            base, message, str(path), ErrorCode.CONFLICT,
            series_source=source.source if source else None, tried_sources=tried,
            merged_files=result.merged, loose_files=result.context_ignored))


def _other_series(run: SetRun, job: BranchJob) -> list[SiblingSeries]:
    """The series to try where the own one conflicts, once the newer targets were applied."""
    run.wait_newer(job, "apply")
    return sibling_series(run.session.cache.path, job.patch_set, job.journal, job.target,
                          out=run.session.run_dir(job.patch_set.name) / "resolutions")


def env_evidence(bm: BranchMap, env_name: str, probe: Probe | None, note: str,
                 autoload_disabled: bool, *, among: Sequence[str]) -> EnvEvidence:
    """The environment half of the evidence, shared with the branches ``among`` that use it."""
    shared = tuple(t.name for t in bm.targets.values() if t.env == env_name and t.name in among)
    return EnvEvidence(name=env_name, shared_with=shared, note=note,
                       autoload_disabled=autoload_disabled, probe=probe)


def test_step(run: SetRun, job: BranchJob) -> bool:
    """Run the set's tests in the target's environment; False when it stopped."""
    options, rec, ps = run.options, job.record, job.patch_set
    if (not options.forces(ps.name) and rec.status in (Status.TESTED, Status.PUSHED)
            and rec.test and rec.test.ok and rec.test.commit == rec.commit):
        job.event("tested", "kept the passing result of the previous run")
        return True
    if options.skip_tests or not ps.tests:
        # a set with no test says so even under --skip-tests: that is why none would run
        cause = options.skip_cause if ps.tests else SKIP_NO_TESTS
        said = SKIP_CAUSE_TEXT[cause]
        job.change(lambda r: r.tested(TestResult.skipped_for(cause), r.env,
                                      f"tests not run: {said}"))
        job.event("tested", f"skipped ({said})")
        return True
    ready = _environment(run, job)
    if ready is None:
        return False
    env, evidence = ready
    result, runs = _run_tests(run, job, env)
    if result.ok:
        job.change(lambda r: r.tested(result, evidence, ""))
        job.event("tested", result.summary)
        return True
    said = result.summary if exit_stated(result.summary_lines, result.exit_code) else (
        f"{result.summary} (exit {result.exit_code})")
    if not result.patch_tests_ok and all(one.ok for one in runs):
        missed = ", ".join(f"{name} {outcome}" for name, outcome in result.patch_tests
                           if outcome != "ok")
        said = f"{said}, but the tests the patch adds did not all pass: {missed}"
    message = f"the test failed on {job.target}: {said}; log: {result.log}"
    job.stop(lambda r: r.test_failed(message, result, evidence))
    return False


def _environment(run: SetRun, job: BranchJob) -> tuple[Environment, EnvEvidence] | None:
    """The target's environment, probed and checked; None after stopping the branch."""
    bm = run.branch_map
    env = bm.environments[bm.targets[job.target].env]
    evidence_of = partial(env_evidence, bm, env.name, among=job.patch_set.branches)
    job.event("probe", env.name)
    try:
        probe = run.session.envs.probe(env)
    except BackportError as exc:
        message, unread = exc.message, evidence_of(None, "", False)
        job.stop(lambda r: r.env_missing(message, unread))
        return None
    if mismatches := pin_mismatches(env, probe):
        message = (f"environment '{env.name}' for {job.target} does not match its pins: "
                   f"{'; '.join(mismatches)}; the test was not run")
        read = evidence_of(probe, "pins do not match", False)
        job.stop(lambda r: r.env_mismatched(message, read, mismatches))
        return None
    verdict = device_verdict(probe, job.patch_set.device)
    evidence = evidence_of(probe, verdict.note, verdict.autoload_off)
    if not verdict.runnable:
        message = (f"environment '{env.name}' for {job.target} cannot run a device: npu test: "
                   f"{verdict.note}")
        job.stop(lambda r: r.env_unavailable(message, evidence))
        return None
    return env, evidence


def _run_tests(run: SetRun, job: BranchJob, env: Environment) -> tuple[TestResult, list[Any]]:
    """Each of the set's test files run in the branch's worktree, and their one result."""
    rec = job.record
    runner = run.session.envs.runner(env, job.patch_set.device)
    assert rec.worktree is not None
    path = Path(rec.worktree)
    changes, overlay = changes_for_run(job, run.session.envs, env, path)
    kind = ("isolated, over a copy of the installed torch_npu" if overlay is not None
            else str(getattr(runner, "kind", "warm worker")))
    runs = []
    for index, spec in enumerate(job.patch_set.tests):
        job.event("testing", f"{spec.path} ({kind})")
        started = time.monotonic()
        runs.append(runner.run(path, spec, log_path(run, job, index), timeout=run.options.timeout,
                               overlay=overlay))
        job.event("testing", f"{spec.path} finished in {time.monotonic() - started:.1f}s ({kind})")
    outcomes = patch_test_outcomes(rec, job.patch_set, runs)
    return TestResult.of_runs(runs, rec.commit, outcomes, changes), runs


def patch_test_outcomes(rec: BranchRecord, ps: PatchSet, runs: list[Any]) -> list[tuple[str, str]]:
    """(name, outcome) of each test the series adds, read from its run's verbose output."""
    added = [AddedTest.from_node_id(node) for node in rec.added_tests]
    found: list[tuple[AddedTest, str]] = []
    for spec, one in zip(ps.tests, runs, strict=False):
        wanted = [t for t in added if t.path == spec.path]
        if not wanted:
            continue
        try:
            text = Path(one.log).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        found += zip(wanted, outcomes_of(text, [(t.scope or "", t.name) for t in wanted]),
                     strict=True)
    names = [t.name for t, _ in found]
    return [(t.name if names.count(t.name) == 1 else t.qualname, outcome)
            for t, outcome in found]


def changes_for_run(job: BranchJob, envs: Environments, env: Environment,
                    worktree: Path) -> tuple[ChangeScope, Path | None]:
    """The series' scope beyond tests, and the overlay folder for the tests' path (or None)."""
    rec = job.record
    if rec.base and rec.commit:
        paths = changed_paths(worktree, rec.base, rec.commit)  # path -> the commit keeps it
    else:
        paths = {path: True for patch in job.patch_set.series_for(job.target)
                 for path in patch.paths}
    wanted = overlay_paths(paths)
    if not wanted:
        return scope_of(paths), None
    commit = rec.commit or "HEAD"
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


def _is_series_afresh(job: BranchJob, cache: RepoCache, skip_tests: bool) -> bool:
    """A publish step's commit must be the series applied afresh; False after stopping."""
    rec = job.record
    if not (skip_tests and rec.test is not None and rec.test.ok and rec.commit
            and rec.base and rec.series_source is None and not rec.manual):
        return True
    series = job.patch_set.series_for(job.target)
    urls = (cache.url,)  # blobs a blobless cache lacks come from the upstream
    made = series_tree(cache.path, rec.base, series, urls=urls)
    if made is not None and made == commit_tree(cache.path, rec.commit, urls=urls):
        job.event("push", f"{rec.commit[:9]} is the series applied afresh on {rec.base[:9]}")
        return True
    message = (f"the tested commit {rec.commit[:9]} is not what the series makes on "
               f"{rec.base[:9]} applied afresh; nothing was pushed: run the branch again")
    job.stop(lambda r: r.failed(Status.FAILED, message, ErrorCode.GIT))
    return False


def push_step(run: SetRun, job: BranchJob) -> bool:
    """Push with a lease; not where someone else moved it (unless --overwrite-fork-branch)."""
    session, options = run.session, run.options
    fork_url, fork = run.branch_map.fork_url, session.fork
    push_env = session.forge.client().push_credentials(fork_url)
    rec, commit = job.record, job.record.commit
    assert commit is not None
    if not _is_series_afresh(job, session.cache, options.skip_tests):
        return False
    remote = fork.head(fork_url, job.fork_branch, push_env)
    if remote == commit:
        job.change(lambda r: r.pushed(commit))
        job.event("pushed", f"{job.fork_branch} already at {commit[:9]}")
        return True
    ours = {sha for sha in (rec.pushed_sha, rec.push_intent) if sha}
    if remote is not None and remote not in ours and not options.overwrite_fork_branch:
        last = rec.pushed_sha
        message = (f"fork branch '{job.fork_branch}' is at {remote[:9]}, which this tool did "
                   f"not push (it last pushed {last[:9] if last else 'nothing'}); it may hold "
                   f"someone's fix: compare it with {commit[:9]}, then rerun with "
                   f"--overwrite-fork-branch to replace it, or keep it and open the PR by hand")
        job.stop(lambda r: r.fork_diverged(message, remote))
        return False
    job.event("pushing", f"{job.fork_branch} -> fork")
    try:
        if not fork.push(session.cache.path, fork_url, commit, job.fork_branch, expect=remote,
                         env=push_env, started=lambda: job.change(lambda r: r.push_started(commit))):
            job.change(lambda r: r.planned("dry run: nothing pushed"))
            return True
    except BackportError as exc:
        output = exc.details.get("output")
        if not output:
            raise
        push_log = log_path(run, job, 0).with_suffix(".push.log")
        write_text(push_log, output)
        raise BackportError(exc.code, f"{exc.message.rstrip('.')}; git's output: {push_log}",
                            details=exc.details) from exc
    job.change(lambda r: r.pushed(commit))
    job.event("pushed", f"{job.fork_branch} @ {commit[:9]}")
    return True
