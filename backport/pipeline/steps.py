"""The apply, test and push steps, each ``step(run, job)``. Each reads and writes one journal
record and is safe to repeat."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from backport.config.model import BranchMap, PatchSet
from backport.envs.model import Probe
from backport.envs.probe import device_verdict, pin_mismatches
from backport.envs.summary import outcomes_of
from backport.errors import BackportError, ErrorCode
from backport.git.apply import am_in_progress, commit_tree, series_tree, snapshot
from backport.git.cache import RepoCache
from backport.git.python_tests import AddedTest, with_classes
from backport.git.run import token_git
from backport.git.worktree import Worktree, cache_branch
from backport.jsonfile import secure_dir, write_text
from backport.pipeline.beyond_tests import changes_for_run
from backport.pipeline.decide import Decision, Verdict, decide
from backport.pipeline.job import BranchJob
from backport.pipeline.propagate import SiblingSeries, sibling_series
from backport.pipeline.set_run import SetRun
from backport.records import SKIP_CAUSE_TEXT, SKIP_NO_TESTS, BranchRecord, EnvEvidence, TestResult
from backport.report.wording import exit_stated
from backport.states import Status


def worktree_path(work_dir: Path, job: BranchJob) -> Path:
    """The branch's worktree under ``work_dir`` (the project's ``.backport``; a dry run's
    temporary folder)."""
    return work_dir / "worktrees" / job.patch_set.name / job.target


def log_path(run: SetRun, job: BranchJob, test_index: int) -> Path:
    suffix = f".{test_index}" if test_index else ""
    safe = job.target.replace("/", "_")
    return secure_dir(run.session.run_dir(job.patch_set.name) / "logs") / f"{safe}{suffix}.log"


# -- apply ------------------------------------------------------------------------------------
def apply_step(run: SetRun, job: BranchJob) -> bool:
    """Put the patch series on a fresh fork branch on top of the fetched base; False when it
    stopped.

    Keeps the previous run's commit when its base is the same (or it was made by hand), the
    cache holds it (and, where a test is to run in it, its worktree too: `_kept`) and
    ``--force`` is not given. Where the own series conflicts, the
    siblings' series are tried once the newer targets' apply steps ended (the schedule).
    """
    base = run.bases[job.target]
    if isinstance(base, BackportError):
        raise base
    job.change(BranchRecord.error_cleared)
    cache, work_dir, force = run.session.cache, run.session.work_dir, run.options.forces(job.patch_set.name)
    rec = job.record
    path = worktree_path(work_dir, job)
    series = job.patch_set.series_for(job.target)
    same_base = rec.base == base or rec.manual  # a hand-made fix survives a moved base
    if (rec.commit and same_base and path.exists() and not force
            and rec.status not in (Status.PENDING, Status.CONFLICT) and _kept(run, job, path)):
        return True
    job.event("apply", f"{len(series)} patch(es) on {job.target} @ {base[:9]}")
    decision = decide(
        cache, base, series, [t.path for t in job.patch_set.tests],
        worktree=lambda: Worktree.create(cache, path, cache_branch(work_dir, job.fork_branch),
                                         base, job.patch_set.paths_for(job.target)),
        others=lambda: _other_series(run, job), event=lambda detail: job.event("apply", detail))
    return _record_decision(job, base, path, decision)


def _kept(run: SetRun, job: BranchJob, path: Path) -> bool:
    """Whether the previous run's commit goes on (said as an event): this run's cache
    repository must hold it. Where no test runs in the worktree in this run (`_no_test_runs`)
    only the cache is asked; otherwise the worktree at ``path`` must still hold it too."""
    cache, commit = run.session.cache, job.record.commit
    assert commit is not None
    if _no_test_runs(run, job.record):
        here = _in_cache(cache, commit)
    else:
        try:
            wt = Worktree.open(path)
            if wt.head() != commit or am_in_progress(wt):
                return False
        except BackportError:
            return False
        here = _same_repo(wt.repo, cache.path)
    if here:
        job.event("apply", f"kept {commit[:9]} from the previous run")
    else:
        job.event("apply", f"the previous run's commit {commit[:9]} is not in this run's cache "
                  "repository (the cache folder was moved, cleared or is another one): "
                  "applying again")
    return here


def _no_test_runs(run: SetRun, rec: BranchRecord) -> bool:
    """True when no test will run in the branch's worktree in this run (a publish step, or the
    passing result of the commit kept): the commit recorded before its test is what goes on,
    and the worktree, which the test's code could write, is not read."""
    return run.options.skip_tests or bool(rec.test and rec.test.ok
                                          and rec.test.commit == rec.commit)


def _in_cache(cache: RepoCache, commit: str) -> bool:
    """True when the cache repository holds ``commit`` (read sealed: the step may hold the
    token)."""
    return token_git(["cat-file", "-e", f"{commit}^{{commit}}"], repo=cache.path,
                     urls=(cache.url,), check=False).ok


def _same_repo(one: Path, other: Path) -> bool:
    """True when two paths name the same git directory."""
    try:
        return one.resolve().samefile(other.resolve())
    except OSError:
        return False


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
            base, f"every test the patch adds is already on {job.target}: {decision.said}; "
                  "no PR needed"))
        job.event("already-present", decision.said)
        return False
    for test in decision.present:
        job.event("apply", f"already on {job.target}: {test.describe()}")
    wt, result, source, tried = decision.worktree, decision.result, decision.source, decision.tried
    assert wt is not None and result is not None
    if decision.verdict is Verdict.NO_CHANGE:
        wt.remove()
        job.change(lambda r: r.no_change(
            base, f"the patch makes no change on {job.target}; no PR needed"))
        job.event("already-applied", "no change")
        return False
    if decision.verdict is Verdict.CONFLICT:
        files = ", ".join(result.conflicts) or "unknown files"
        still = f"; {', '.join(tried)} still conflict{'s' if len(tried) == 1 else ''}" if tried else ""
        message = (f"{result.message}{still}; resolve it in {path}, then run `backport "
                   f"continue --api {job.patch_set.name} --branch {job.target}` (or `backport "
                   f"abort`)")
        left = snapshot(wt, result.conflicts)
        job.stop(lambda r: r.conflicted(base, message, result.conflicts, str(path), tried,
                                        left))
        job.event("conflict", files)
        return False
    if decision.verdict is Verdict.UNUSABLE:
        message = (f"with the series applied on {job.target}, {'; '.join(decision.problems)}; "
                   f"nothing was pushed: change the patch (its commit is kept in {path} to look at)")
        job.stop(lambda r: r.unusable(
            base, message, str(path), ErrorCode.CONFLICT,
            series_source=source.source if source else None, tried_sources=tried,
            merged_files=result.merged, loose_files=result.loose))
        return False
    added = with_classes(wt.path, base, result.head, decision.added, wt.memo.reader(wt.path))
    job.change(lambda r: r.applied(
        base, result.head, str(path), [t.node_id for t in added],
        series_source=source.source if source else None, tried_sources=tried,
        merged_files=result.merged, loose_files=result.loose))
    job.event("applied", result.head[:9] + (f" from {source.label}" if source else ""))
    if result.merged:
        job.event("apply", f"{', '.join(result.merged)} went in only through a 3-way merge; "
                  "compare it with the newer branches")
    if result.loose:
        job.event("apply", f"{', '.join(result.loose)} went in with context lines ignored; "
                  "compare it with the newer branches")
    return True


def _other_series(run: SetRun, job: BranchJob) -> list[SiblingSeries]:
    """The series to try where the own one conflicts (see `propagate.try_siblings`), once the
    newer targets of this run have been applied."""
    run.wait_newer(job, "apply")
    return sibling_series(run.session.cache.path, job.patch_set, job.journal, job.target,
                          out=run.session.run_dir(job.patch_set.name) / "resolutions")


# -- test -------------------------------------------------------------------------------------
def env_evidence(bm: BranchMap, env_name: str, probe: Probe | None, note: str,
                 autoload_disabled: bool, *, among: Sequence[str]) -> EnvEvidence:
    """The environment half of the evidence: only values the probe really read; it is shared
    with the branches ``among`` (the patch set's) that use it too."""
    shared = tuple(t.name for t in bm.targets.values() if t.env == env_name and t.name in among)
    return EnvEvidence(name=env_name, shared_with=shared, note=note,
                       autoload_disabled=autoload_disabled, probe=probe)


def test_step(run: SetRun, job: BranchJob) -> bool:
    """Run the patch set's tests under the target's environment; False when it stopped.

    Keeps the previous run's passing result of the same commit unless ``--force`` (or a set
    made again) redoes it; ``--skip-tests`` runs no test code at all (a CI's publish step after its test step
    without the token), keeping such a result or else recording the tests as not run; a set
    with no test (a PR that adds or changes none) records them as not run for that cause.
    """
    envs, bm, options = run.session.envs, run.branch_map, run.options
    rec = job.record
    if (not options.forces(job.patch_set.name) and rec.status in (Status.TESTED, Status.PUSHED)
            and rec.test and rec.test.ok and rec.test.commit == rec.commit):
        job.event("tested", "kept the passing result of the previous run")
        return True
    if options.skip_tests or not job.patch_set.tests:
        # a set with no test says so even under --skip-tests: that is why none would run
        cause = options.skip_cause if job.patch_set.tests else SKIP_NO_TESTS
        skipped = TestResult.skipped_for(cause)
        said = SKIP_CAUSE_TEXT[cause]
        job.change(lambda r: r.tested(skipped, r.env, f"tests not run: {said}"))
        job.event("tested", f"skipped ({said})")
        return True
    env = bm.environments[bm.targets[job.target].env]
    job.event("probe", env.name)
    try:
        probe = envs.probe(env)
    except BackportError as exc:
        message = exc.message
        unread = env_evidence(bm, env.name, None, "", False, among=job.patch_set.branches)
        job.stop(lambda r: r.env_missing(message, unread))
        return False
    mismatches = pin_mismatches(env, probe)
    if mismatches:
        message = (f"environment '{env.name}' for {job.target} does not match its pins: "
                   f"{'; '.join(mismatches)}; the test was not run")
        read = env_evidence(bm, env.name, probe, "pins do not match", False,
                            among=job.patch_set.branches)
        job.stop(lambda r: r.env_mismatched(message, read, mismatches))
        return False
    verdict = device_verdict(probe, job.patch_set.device)
    evidence = env_evidence(bm, env.name, probe, verdict.note, verdict.autoload_off,
                            among=job.patch_set.branches)
    if not verdict.runnable:
        message = (f"environment '{env.name}' for {job.target} cannot run a device: npu test: "
                   f"{verdict.note}")
        job.stop(lambda r: r.env_unavailable(message, evidence))
        return False
    runner = envs.runner(env, job.patch_set.device)
    assert rec.worktree is not None
    path = Path(rec.worktree)
    changes, overlay = changes_for_run(job, envs, env, path)
    runs = []
    for index, spec in enumerate(job.patch_set.tests):
        job.event("testing", f"{spec.path} ({runner_kind(runner, overlay)})")
        started = time.monotonic()
        runs.append(runner.run(path, spec, log_path(run, job, index), timeout=options.timeout,
                               overlay=overlay))
        job.event("testing", f"{spec.path} finished in {time.monotonic() - started:.1f}s "
                             f"({runner_kind(runner, overlay)})")
    result = TestResult.of_runs(runs, rec.commit, patch_test_outcomes(rec, job.patch_set, runs),
                                changes)
    if result.ok:
        job.change(lambda r: r.tested(result, evidence, ""))
        job.event("tested", result.summary)
        return True
    code = result.exit_code
    said = result.summary if exit_stated(result.summary_lines, code) else (
        f"{result.summary} (exit {code})")
    if not result.patch_tests_ok and all(run.ok for run in runs):
        missed = ", ".join(f"{name} {outcome}" for name, outcome in result.patch_tests
                           if outcome != "ok")
        said = f"{said}, but the tests the patch adds did not all pass: {missed}"
    message = f"the test failed on {job.target}: {said}; log: {result.log}"
    job.stop(lambda r: r.test_failed(message, result, evidence))
    return False


def patch_test_outcomes(rec: BranchRecord, ps: PatchSet, runs: list[Any]) -> list[tuple[str, str]]:
    """(name, outcome) of every test the series adds in the files the patch set runs, read
    from those runs' verbose output; named without their class unless two share a name."""
    added = [AddedTest.from_node_id(node) for node in rec.added_tests]
    found: list[tuple[AddedTest, str]] = []
    for spec, run in zip(ps.tests, runs, strict=False):
        wanted = [t for t in added if t.path == spec.path]
        if not wanted:
            continue
        try:
            text = Path(run.log).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        found += zip(wanted, outcomes_of(text, [(t.scope or "", t.name) for t in wanted]),
                     strict=True)
    names = [t.name for t, _ in found]
    return [(t.name if names.count(t.name) == 1 else t.qualname, outcome)
            for t, outcome in found]


def runner_kind(runner: Any, overlay: Path | None = None) -> str:
    """How ``runner`` runs tests."""
    if overlay is not None:
        return "isolated, over a copy of the installed torch_npu"
    return str(getattr(runner, "kind", "warm worker"))


# -- push -------------------------------------------------------------------------------------
def _fresh(job: BranchJob, cache: RepoCache, skip_tests: bool) -> bool:
    """A publish step (``--skip-tests`` after a run that tested the commit) pushes only a commit
    whose tree equals the series applied afresh on its base; False after stopping the branch.
    A commit of another series (a resolution, a sibling's) is not re-derived here. Read from
    the cache's objects only (the worktree the tests wrote is not looked at), every git
    process sealed (`token_git`)."""
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
    """Push the fork branch to the fork only, with a lease on what this tool last pushed.

    Nothing is pushed when the fork branch is already at the commit, or someone else moved it
    (unless ``--overwrite-fork-branch``); a dry run's fork (`Session.fork`) only plans the push.
    """
    session, options = run.session, run.options
    repo, fork_url, fork = session.cache.path, run.branch_map.fork_url, session.fork
    push_env = session.forge.push_env()
    rec = job.record
    commit = rec.commit
    assert commit is not None
    if not _fresh(job, session.cache, options.skip_tests):
        return False
    remote = fork.head(fork_url, job.fork_branch, push_env)
    ours = {sha for sha in (rec.pushed_sha, rec.push_intent) if sha}
    if remote == commit:
        job.change(lambda r: r.pushed(commit))
        job.event("pushed", f"{job.fork_branch} already at {commit[:9]}")
        return True
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
        if not fork.push(repo, fork_url, commit, job.fork_branch, expect=remote, env=push_env,
                         started=lambda: job.change(lambda r: r.push_started(commit))):
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
