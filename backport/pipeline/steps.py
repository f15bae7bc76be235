"""The per-branch steps. Each reads and writes one journal record and is safe to repeat."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backport.config.model import BranchMap, PatchSet, PrOptions
from backport.config.patchfiles import Patch
from backport.docs_audit import DocsEntry
from backport.envs.device import device_verdict
from backport.envs.model import Probe
from backport.envs.pins import pin_mismatches
from backport.envs.pool import Environments
from backport.envs.verbose import outcomes_of
from backport.errors import BackportError, ErrorCode
from backport.forge import Forge, PullRequest
from backport.forge.base import is_refusal
from backport.git.apply import (
    ApplyResult,
    already_applied,
    am_in_progress,
    apply_series,
    snapshot,
)
from backport.git.cache import RepoCache
from backport.git.present import (
    AddedTest,
    PresentTest,
    added_tests,
    changed_python_tests,
    present_tests,
    source_problems,
    with_classes,
)
from backport.git.push import push_branch, remote_sha
from backport.git.worktree import Worktree, cache_branch
from backport.pipeline.journal import Journal, Transition, atomic_write_text, secure_dir
from backport.pipeline.kept_worktree import kept_worktree
from backport.pipeline.propagate import SiblingSeries, sibling_series, try_siblings
from backport.pipeline.session import ApplyOptions
from backport.pipeline.shared_results import (
    SetOnForge,
    body_context,
    draft_implied,
    read_set,
    record_for,
)
from backport.records import BranchRecord, EnvEvidence, ExistingTest, PrInfo, TestResult
from backport.report.body import exit_stated, render_body
from backport.states import Status

Event = Callable[[str, str], None]  # (step, detail)


def _nothing() -> None:
    return None


@dataclass
class BranchJob:
    """One (patch set, target branch) pair of a run."""

    patch_set: PatchSet
    target: str
    fork_branch: str
    journal: Journal
    event: Event
    # Blocks until the newer targets of this run have finished their apply step, so their
    # results (a resolution carried there) can serve this one; set by the runner.
    await_newer: Callable[[], None] = _nothing

    @property
    def record(self) -> BranchRecord:
        rec = self.journal.get(self.target)
        assert rec is not None
        return rec

    def change(self, transition: Transition) -> BranchRecord:
        """Apply one named transition to this branch's record (persisted)."""
        return self.journal.change(self.target, transition)

    def stop(self, transition: Transition) -> None:
        """Apply a transition that stops the branch, and report its status and message."""
        rec = self.change(transition)
        self.event(rec.status.value, rec.message)


def worktree_path(state_dir: Path, job: BranchJob) -> Path:
    return state_dir / "worktrees" / job.patch_set.name / job.target


def log_path(job: BranchJob, test_index: int) -> Path:
    suffix = f".{test_index}" if test_index else ""
    safe = job.target.replace("/", "_")
    return secure_dir(job.journal.run_dir / "logs") / f"{safe}{suffix}.log"


# -- apply ------------------------------------------------------------------------------------
def apply_step(job: BranchJob, base: str, cache: RepoCache, *, state_dir: Path,
               force: bool = False) -> bool:
    """Put the patch series on a fresh fork branch on top of ``base``; False when it stopped.

    Keeps the previous run's commit when its base is the same (or it was made by hand), its
    worktree still holds it and ``force`` is not given.
    """
    rec = job.record
    path = worktree_path(state_dir, job)
    series = job.patch_set.series_for(job.target)
    same_base = rec.base == base or rec.manual  # a hand-made fix survives a moved base
    if (rec.commit and same_base and path.exists() and not force
            and rec.status not in (Status.PENDING, Status.CONFLICT)):
        try:
            wt = Worktree.open(path)
            if wt.head() == rec.commit and not am_in_progress(wt):
                job.event("apply", f"kept {rec.commit[:9]} from the previous run")
                return True
        except BackportError:
            pass
    job.event("apply", f"{len(series)} patch(es) on {job.target} @ {base[:9]}")
    if already_applied(cache, base, series):
        job.change(lambda r: r.already_upstream(
            base, f"the patch is already on {job.target} (same patch-id); no PR needed"))
        job.event("already-applied", "same patch-id upstream")
        return False
    added = added_tests(cache.path, series)
    present = existing_tests(present_tests(cache.path, base, added)) if added else ()
    job.change(lambda r: r.tests_found([t.node_id for t in added], present))
    if added and len(present) == len(added):
        said = "; ".join(t.describe() for t in present)
        job.change(lambda r: r.already_present(
            base, f"every test the patch adds is already on {job.target}: {said}; no PR needed"))
        job.event("already-present", said)
        return False
    for test in present:
        job.event("apply", f"already on {job.target}: {test.describe()}")
    branch = cache_branch(state_dir, job.fork_branch)
    wt = Worktree.create(cache, path, branch, base, job.patch_set.paths_for(job.target))
    result = apply_series(wt, series)
    source: SiblingSeries | None = None
    tried: list[str] = []
    if result.status == "conflict":
        result, source, tried = _try_siblings(cache, job, wt, series, result)
    if result.status == "already-applied":
        wt.remove()
        job.change(lambda r: r.no_change(
            base, f"the patch makes no change on {job.target}; no PR needed"))
        job.event("already-applied", "no change")
        return False
    if result.status == "conflict":
        files = ", ".join(result.conflicts) or "unknown files"
        still = f"; {', '.join(tried)} still conflict{'s' if len(tried) == 1 else ''}" if tried else ""
        message = (f"{result.message}{still}; resolve it in {path}, then run `backport "
                   f"continue --api {job.patch_set.name} --branch {job.target}` (or `backport "
                   f"abort`)")
        left = snapshot(wt, result.conflicts)
        job.stop(lambda r: r.conflicted(base, message, result.conflicts, str(path), tried, left))
        job.event("conflict", files)
        return False
    problems = source_problems(wt.path, base, result.head, changed_python_tests(
        series, [t.path for t in job.patch_set.tests]))
    if problems:
        message = (f"with the series applied on {job.target}, {'; '.join(problems)}; nothing "
                   f"was pushed: change the patch (its commit is kept in {path} to look at)")
        job.stop(lambda r: r.unusable(
            base, message, str(path), ErrorCode.CONFLICT,
            series_source=source.source if source else None, tried_sources=tried,
            merged_files=result.merged, loose_files=result.loose))
        return False
    added = with_classes(wt.path, base, result.head, added)
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


def existing_tests(found: list[PresentTest]) -> tuple[ExistingTest, ...]:
    """The journal's form of the tests a target already defines."""
    return tuple(ExistingTest(path=p.test.path, name=p.test.qualname, line=p.line,
                              commit=p.commit, subject=p.subject) for p in found)


def _try_siblings(cache: RepoCache, job: BranchJob, wt: Worktree, series: tuple[Patch, ...],
                  own: ApplyResult) -> tuple[ApplyResult, SiblingSeries | None, list[str]]:
    """The own series conflicted: try the siblings' series (see `propagate.try_siblings`),
    once the newer targets of this run have been applied."""
    job.await_newer()
    candidates = sibling_series(cache.path, job.patch_set, job.journal, job.target)
    return try_siblings(wt, candidates, series, own, lambda detail: job.event("apply", detail))


# -- test -------------------------------------------------------------------------------------
def env_evidence(bm: BranchMap, env_name: str, probe: Probe | None, note: str,
                 autoload_disabled: bool) -> EnvEvidence:
    """The environment half of the evidence: only values the probe really read."""
    shared = tuple(t.name for t in bm.targets.values() if t.env == env_name)
    return EnvEvidence(name=env_name, shared_with=shared, note=note,
                       autoload_disabled=autoload_disabled, probe=probe)


def test_step(job: BranchJob, envs: Environments, bm: BranchMap, options: ApplyOptions) -> bool:
    """Run the patch set's tests under the target's environment; False when it stopped.

    Keeps the previous run's passing result of the same commit unless ``options.force``.
    """
    rec = job.record
    if options.skip_tests:
        job.change(lambda r: r.tested(TestResult.skipped_on_request(), r.env,
                                      "tests skipped on request"))
        job.event("tested", "skipped (--skip-tests)")
        return True
    if (not options.force and rec.status in (Status.TESTED, Status.PUSHED)
            and rec.test and rec.test.ok and rec.test.commit == rec.commit):
        job.event("tested", "kept the passing result of the previous run")
        return True
    env = bm.environments[bm.targets[job.target].env]
    job.event("probe", env.name)
    try:
        probe = envs.probe(env)
        if env.name in envs.probes_reused:
            job.event("probe", f"{env.name}: reused an earlier probe (nothing it reads changed)")
    except BackportError as exc:
        message = exc.message
        unread = env_evidence(bm, env.name, None, "", False)
        job.stop(lambda r: r.env_missing(message, unread))
        return False
    mismatches = pin_mismatches(env, probe)
    if mismatches:
        message = (f"environment '{env.name}' for {job.target} does not match its pins: "
                   f"{'; '.join(mismatches)}; the test was not run")
        read = env_evidence(bm, env.name, probe, "pins do not match", False)
        job.stop(lambda r: r.env_mismatched(message, read, mismatches))
        return False
    verdict = device_verdict(probe, job.patch_set.device)
    evidence = env_evidence(bm, env.name, probe, verdict.note, verdict.autoload_off)
    if not verdict.runnable:
        message = (f"environment '{env.name}' for {job.target} cannot run a device: npu test: "
                   f"{verdict.note}")
        job.stop(lambda r: r.env_unavailable(message, evidence))
        return False
    runner = envs.runner(env, job.patch_set.device)
    assert rec.worktree is not None
    path = Path(rec.worktree)
    runs = []
    for index, spec in enumerate(job.patch_set.tests):
        job.event("testing", f"{spec.path} ({runner_kind(runner)})")
        started = time.monotonic()
        runs.append(runner.run(path, spec, log_path(job, index), timeout=options.timeout))
        job.event("testing", f"{spec.path} finished in {time.monotonic() - started:.1f}s "
                             f"({runner_kind(runner)})")
    result = TestResult.of_runs(runs, rec.commit, patch_test_outcomes(rec, job.patch_set, runs))
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


def runner_kind(runner: Any) -> str:
    return str(getattr(runner, "kind", "warm worker"))


# -- push -------------------------------------------------------------------------------------
def push_step(job: BranchJob, *, repo: Path, fork_url: str, push_env: dict[str, str] | None,
              options: ApplyOptions, plan: Callable[[str], None]) -> bool:
    """Push the fork branch to the fork only, with a lease on what this tool last pushed.

    ``repo`` holds the commit; ``push_env`` carries the push credentials. Nothing is pushed
    when the fork branch is already at the commit, or someone else moved it (unless
    ``options.overwrite_fork_branch``); ``options.dry_run`` only plans the push.
    """
    rec = job.record
    commit = rec.commit
    assert commit is not None
    remote = remote_sha(fork_url, job.fork_branch, env=push_env)
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
    if options.dry_run:
        plan(f"git push --force-with-lease={job.fork_branch}:{remote or ''} <fork> "
                     f"{commit[:9]}:refs/heads/{job.fork_branch}")
        job.change(lambda r: r.planned("dry run: nothing pushed"))
        return True
    job.event("pushing", f"{job.fork_branch} -> fork")
    job.change(lambda r: r.push_started(commit))
    try:
        push_branch(repo, fork_url, commit, job.fork_branch, expect=remote, env=push_env)
    except BackportError as exc:
        output = exc.details.get("output")
        if not output:
            raise
        push_log = log_path(job, 0).with_suffix(".push.log")
        atomic_write_text(push_log, output)
        raise BackportError(exc.code, f"{exc.message.rstrip('.')}; git's output: {push_log}",
                            details=exc.details) from exc
    job.change(lambda r: r.pushed(commit))
    job.event("pushed", f"{job.fork_branch} @ {commit[:9]}")
    return True


# -- pull request -----------------------------------------------------------------------------
def pr_step(job: BranchJob, forge: Forge, docs: Sequence[DocsEntry] | None, bm: BranchMap,
            all_targets: list[str], *, read_siblings: bool = False) -> None:
    """Find or create the PR for this fork branch, refresh its body, link the issue.

    An open PR of the fork branch is found again, never duplicated; it is decorated once, and
    commented again only when its branch was pushed since (``comment_on_push``). With
    ``read_siblings`` (some branches of the set are not in this run) the other branches'
    results are read from their own PRs first. The issue link, decorations and comment are
    best-effort: a refusal is a warning, recorded and not retried. A branch whose wrong PR
    backport closed once gets no second PR.
    """
    ps = job.patch_set
    opts = ps.pr
    rec = job.record
    failed = rec.test is not None and rec.test.ok is False
    draft = draft_implied(rec, ps)  # from this run's result: a passing re-run clears the draft
    state = read_set(forge, ps, bm) if read_siblings else None
    ctx = body_context(ps, bm, job.journal.records(all_targets), job.target, docs, state,
                       own_from_journal=True)
    job.event("pr", "looking for an open PR")
    pr = forge.find_open_pr(job.fork_branch, job.target)
    created = False
    warnings: list[str] = []
    if pr is None:
        if rec.closed_prs and not forge.dry_run:
            raise BackportError(
                "forge", f"backport closed PR !{rec.closed_prs[-1]} for {job.fork_branch} in an "
                         "earlier run because the forge opened it from another repository or "
                         "branch, and opens no second one: open the PR from the fork branch by "
                         "hand, then run again to fill it in.")
        body = render_body(ctx)
        try:
            pr = forge.create_pr(job.fork_branch, job.target, ps.title, body, draft=draft,
                                 head_sha=rec.pushed_sha,
                                 close_related_issue=opts.close_related_issue)
        except BackportError as exc:
            if exc.details.get("closed") is True:
                closed = int(exc.details["number"])
                job.change(lambda r: r.pr_closed(closed))
            raise
        created = True
    else:
        body = render_body(ctx, existing=pr.body)
        if body != pr.body or pr.title != ps.title or pr.draft != draft:
            pr = forge.update_pr(pr.number, title=ps.title, body=body, draft=draft,
                                 close_related_issue=opts.close_related_issue)
            if pr.not_taken:
                warnings.append(f"PR !{pr.number} did not take the new "
                                f"{', '.join(pr.not_taken)} (sent as JSON and as a form); "
                                f"check it on {pr.url}")
    previous = rec.pr if rec.pr and not created and rec.pr.number == pr.number else None
    pr_info = PrInfo(number=pr.number, url=pr.url,
                     decorated=bool(previous and previous.decorated),
                     linked=bool(previous and previous.linked),
                     commented_sha=previous.commented_sha if previous else None,
                     refused=previous.refused if previous else ())
    job.change(lambda r: r.with_pr(pr_info))
    kept = [w for w in rec.warnings if not _said_again(w, pr.number, ps.issue, pr_info)] \
        if previous else []
    if not pr_info.linked and "link" not in pr_info.refused:
        failed_link, refusal = _link(forge, pr.number, ps.issue)
        if failed_link:
            warnings.append(failed_link)
            if refusal:
                pr_info = pr_info.refusing("link")
        else:
            pr_info = pr_info.link_made()
        linked = pr_info
        job.change(lambda r: r.with_pr(linked))
    closed_issue = _closed_issue(forge, ps.issue, pr)
    if closed_issue:
        warnings.append(closed_issue)
    pushed = rec.pushed_sha
    comment = False
    if not pr_info.decorated:
        kept = []
        warnings.extend(_decorate(forge, pr.number, opts))
        pr_info = pr_info.decorations_made()  # best-effort: never retried
        comment = bool(opts.comment)
    elif (opts.comment and opts.comment_on_push and pushed
          and pr_info.commented_sha != pushed and "comment" not in pr_info.refused):
        comment = True  # the branch of this open PR was force-pushed since the comment
    if comment:
        refused = _comment(forge, pr.number, opts.comment)
        if refused:
            warnings.append(refused)
            pr_info = pr_info.refusing("comment")
        else:
            pr_info = pr_info.commented(pushed)
    if forge.dry_run:
        final, message = Status.PLANNED, "dry run: no PR written"
    elif failed:
        final = Status.TEST_FAILED
        message = f"{rec.message}; a draft PR shows the failure (--pr-on-failure)"
    else:
        final, message = Status.DONE, ""
    all_warnings = list(dict.fromkeys([*kept, *warnings]))
    done = pr_info
    job.change(lambda r: r.finished(final, message, done, all_warnings))
    for warning in warnings:
        job.event("warning", warning)
    if final == Status.DONE:
        _drop_worktree(job)
    job.event("done" if final == Status.DONE else final.value, pr.url)


def _link(forge: Forge, number: int, issue: int) -> tuple[str | None, bool]:
    """Link the patch set's issue; a failure is returned as a warning (the PR stays open) and
    whether it was a refusal (403/404: not tried again; anything else: the next run tries)."""
    try:
        forge.link_issue(number, issue)
    except BackportError as exc:
        refusal = is_refusal(exc)
        again = "not tried again" if refusal else "tried again on the next run"
        return (f"issue #{issue} not linked to PR !{number} (the PR is open without the link; "
                f"{again}): {exc.message}"), refusal
    return None, False


def _said_again(warning: str, number: int, issue: int, pr_info: PrInfo) -> bool:
    """Whether this run says ``warning`` afresh if it still holds (so the old one goes)."""
    return (warning.startswith((f"PR !{number} did not take", f"issue #{issue} is closed while"))
            or (warning.startswith(f"issue #{issue} not linked to PR !{number}")
                and "link" not in pr_info.refused))


def _closed_issue(forge: Forge, issue: int, pr: PullRequest) -> str | None:
    """A warning when the set's issue is closed while this PR is open (a sibling's merge may
    have closed it for all of them)."""
    if pr.state != "open" or forge.issue_state(issue) != "closed":
        return None
    return (f"issue #{issue} is closed while PR !{pr.number} is open; reopen it if the "
            "backports are not all merged")


def _decorate(forge: Forge, number: int, opts: PrOptions) -> list[str]:
    """Add labels, assignees, reviewers and testers one kind at a time; refusals as warnings."""
    warnings = []
    for kind, names in (("labels", opts.labels), ("assignees", opts.assignees),
                        ("reviewers", opts.reviewers), ("testers", opts.testers)):
        if not names:
            continue
        try:
            forge.decorate(number, **{kind: names})
        except BackportError as exc:
            warnings.append(f"{kind} {', '.join(names)} not added to PR !{number} (the PR is "
                            f"open without them): {exc.message}")
    return warnings


def _comment(forge: Forge, number: int, comment: str | None) -> str | None:
    """Post the configured comment (e.g. the CI trigger); a refusal is returned as a warning."""
    try:
        forge.add_comment(number, comment or "")
    except BackportError as exc:
        return (f"comment {comment!r} not posted on PR !{number} (not tried again): "
                f"{exc.message}")
    return None


def _drop_worktree(job: BranchJob) -> None:
    """A finished branch needs its worktree no more: the commit is on the fork and recorded."""
    worktree = kept_worktree(job.record)
    if worktree is not None:
        worktree.remove()
    job.change(BranchRecord.worktree_removed)


def refresh_sibling_pr(job: BranchJob, forge: Forge, docs: Sequence[DocsEntry] | None, bm: BranchMap,
                       all_targets: list[str], state: SetOnForge,
                       ran: frozenset[str] = frozenset()) -> bool:
    """Bring a branch's open PR (as ``state`` read it) up to date with what is true now.

    Every branch with a PR is refreshed, whatever its status or wherever it ran: the other
    branches' results and PRs change, and a fork branch moved by someone else makes this PR's
    own evidence stale. Nothing is written when neither the generated regions nor the draft
    state would change; before writing, the PR is read again, so text a maintainer added since
    the list is kept. Returns True when the PR was updated. The title keeps its wording and is
    sent with the draft state the branch's result implies (a failing test stays draft).
    ``ran``: the branches this run worked on (their results of this run come first).
    """
    ps = job.patch_set
    listed = state.prs.get(job.target)
    if listed is None:
        return False
    records = job.journal.records(all_targets)
    if not _out_of_date(listed, ps, bm, records, job.target, docs, state, ran):
        return False
    pr = forge.get_pr(listed.number)
    if pr.state != "open":
        return False
    state = state.with_pr(job.target, pr)
    ctx = body_context(ps, bm, records, job.target, docs, state, own_from_journal=False, ran=ran)
    body = render_body(ctx, existing=pr.body)
    draft = draft_implied(record_for(records, state, job.target, ran), ps)
    if body == pr.body and pr.draft == draft:
        return False
    forge.update_pr(pr.number, title=pr.title, body=body, draft=draft)
    job.event("pr", f"body of the {job.target} PR refreshed: {pr.url}")
    return True


def _out_of_date(pr: PullRequest, ps: PatchSet, bm: BranchMap, records: list[BranchRecord],
                 target: str, docs: Sequence[DocsEntry] | None, state: SetOnForge,
                 ran: frozenset[str]) -> bool:
    """True when the PR as listed differs from what it should show (body regions or draft)."""
    ctx = body_context(ps, bm, records, target, docs, state, own_from_journal=False, ran=ran)
    return (render_body(ctx, existing=pr.body) != pr.body
            or pr.draft != draft_implied(record_for(records, state, target, ran), ps))
