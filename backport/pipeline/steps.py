"""The per-branch steps. Each reads and writes one journal record and is safe to repeat."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backport.config.model import PatchSet, PrOptions
from backport.envs.device import device_verdict
from backport.envs.model import Probe, TestRun
from backport.envs.pins import pin_mismatches
from backport.errors import BackportError
from backport.forge import Forge
from backport.git.apply import (
    ApplyResult,
    abort_series,
    already_applied,
    am_in_progress,
    apply_series,
    snapshot,
)
from backport.git.push import push_branch, remote_sha
from backport.git.worktree import Worktree, cache_branch
from backport.pipeline.journal import Journal, atomic_write_text, secure_dir
from backport.pipeline.propagate import SiblingSeries, sibling_series
from backport.pipeline.session import Session
from backport.report.body import BodyContext, exit_stated, render_body
from backport.states import Status

Event = Callable[[str, str], None]  # (step, detail)


@dataclass
class BranchJob:
    """One (patch set, target branch) pair of a run."""

    patch_set: PatchSet
    target: str
    fork_branch: str
    journal: Journal
    event: Event

    @property
    def record(self) -> dict[str, Any]:
        rec = self.journal.get(self.target)
        assert rec is not None
        return rec

    def update(self, **fields: Any) -> dict[str, Any]:
        return self.journal.update(self.target, **fields)

    def fail(self, status: Status, message: str, **fields: Any) -> None:
        self.update(status=status, message=message, **fields)
        self.event(status.value, message)


def worktree_path(session: Session, job: BranchJob) -> Path:
    return session.project.state_dir / "worktrees" / job.patch_set.name / job.target


def log_path(job: BranchJob, test_index: int) -> Path:
    suffix = f".{test_index}" if test_index else ""
    safe = job.target.replace("/", "_")
    return secure_dir(job.journal.run_dir / "logs") / f"{safe}{suffix}.log"


# -- apply ------------------------------------------------------------------------------------
def apply_step(session: Session, job: BranchJob, base: str) -> bool:
    """Put the patch series on a fresh fork branch on top of ``base``; False when it stopped."""
    rec = job.record
    path = worktree_path(session, job)
    series = job.patch_set.series_for(job.target)
    same_base = rec["base"] == base or rec.get("manual")  # a hand-made fix survives a moved base
    if (rec["commit"] and same_base and path.exists() and not session.options.force
            and rec["status"] not in (Status.PENDING, Status.CONFLICT)):
        try:
            wt = Worktree.open(path)
            if wt.head() == rec["commit"] and not am_in_progress(wt):
                job.event("apply", f"kept {rec['commit'][:9]} from the previous run")
                return True
        except BackportError:
            pass
    job.event("apply", f"{len(series)} patch(es) on {job.target} @ {base[:9]}")
    if already_applied(session.cache, base, series):
        job.update(status=Status.ALREADY_APPLIED, base=base, commit=None, conflicts=[],
                   message=f"the patch is already on {job.target} (same patch-id); no PR needed")
        job.event("already-applied", "same patch-id upstream")
        return False
    branch = cache_branch(session.project.state_dir, job.fork_branch)
    wt = Worktree.create(session.cache, path, branch, base, job.patch_set.paths_for(job.target))
    result = apply_series(wt, series)
    source: SiblingSeries | None = None
    tried: list[str] = []
    if result.status == "conflict":
        result, source, tried = _try_siblings(session, job, wt, series, result)
    if result.status == "already-applied":
        wt.remove()
        job.update(status=Status.ALREADY_APPLIED, base=base, commit=None, conflicts=[],
                   worktree=None, message=f"the patch makes no change on {job.target}; no PR needed")
        job.event("already-applied", "no change")
        return False
    if result.status == "conflict":
        files = ", ".join(result.conflicts) or "unknown files"
        still = f"; {', '.join(tried)} still conflict{'s' if len(tried) == 1 else ''}" if tried else ""
        job.fail(Status.CONFLICT,
                 f"{result.message}{still}; resolve it in {path}, then run `backport continue "
                 f"--api {job.patch_set.name} --branch {job.target}` (or `backport abort`)",
                 base=base, commit=None, conflicts=result.conflicts, worktree=str(path),
                 series_source=None, tried_sources=tried, merged_files=[],
                 conflict_snapshot=snapshot(wt, result.conflicts))
        job.event("conflict", files)
        return False
    job.update(status=Status.APPLIED, base=base, commit=result.head, conflicts=[],
               worktree=str(path), message="", test=None, manual=False,
               series_source=source.to_record() if source else None, tried_sources=tried,
               merged_files=result.merged)
    job.event("applied", result.head[:9] + (f" from {source.label}" if source else ""))
    if result.merged:
        job.event("apply", f"{', '.join(result.merged)} went in only through a 3-way merge; "
                  "compare it with the newer branches")
    return True


def _try_siblings(session: Session, job: BranchJob, wt: Worktree, series: tuple[Path, ...],
                  own: ApplyResult) -> tuple[ApplyResult, SiblingSeries | None, list[str]]:
    """The own series conflicted: try the siblings' resolutions and variants, nearest first.

    Returns the result to record, the sibling series that applied (or None) and the labels of
    those that did not. When none applies, the own series' conflict is left for the user.
    """
    candidates = sibling_series(session.cache.path, job.patch_set, job.journal, job.target)
    tried: list[str] = []
    for candidate in candidates:
        abort_series(wt)
        attempt = apply_series(wt, candidate.patches)
        if attempt.status == "applied":
            job.event("apply", f"applied from {candidate.label}")
            return attempt, candidate, tried
        if attempt.status == "conflict":
            abort_series(wt)
        tried.append(candidate.label)
        job.event("apply", f"{candidate.label} still conflicts")
    if not candidates:
        return own, None, tried
    abort_series(wt)
    return apply_series(wt, series), None, tried


# -- test -------------------------------------------------------------------------------------
def env_record(session: Session, env_name: str, probe: Probe | None, note: str,
               autoload_disabled: bool) -> dict[str, Any]:
    """The environment half of the evidence: only values the probe really read."""
    bm = session.project.branch_map
    shared = [t.name for t in bm.targets.values() if t.env == env_name]
    record: dict[str, Any] = {"name": env_name, "shared_with": shared, "note": note,
                              "autoload_disabled": autoload_disabled}
    if probe is None:
        return record
    record.update({
        "interpreter": probe.interpreter, "platform": probe.platform, "python": probe.python,
        "torch": probe.torch, "torch_npu": probe.torch_npu, "cann": probe.cann,
        "npu": probe.npu_model, "visible_npus": probe.npu_count,
        "visible_devices": probe.visible_devices, "torch_npu_loads": probe.torch_npu_loads,
        "torch_npu_error": probe.torch_npu_error, "packages": dict(probe.packages),
    })
    return record


def test_record(runs: list[TestRun]) -> dict[str, Any]:
    """Fold the runs of every test file of the patch set into one record."""
    ran = sum(r.ran or 0 for r in runs) if any(r.ran is not None for r in runs) else None
    exit_code = next((r.exit_code for r in runs if r.exit_code != 0), 0)
    lines = [line for r in runs for line in r.summary]
    return {
        "ran": ran,
        "ok": all(r.ok for r in runs),
        "exit_code": exit_code,
        "summary": ", ".join(lines),
        "summary_lines": lines,
        "duration": round(sum(r.duration for r in runs), 3),
        "command": "; ".join(r.command for r in runs),
        "runner": runs[0].runner if runs else None,
        "timed_out": any(r.timed_out for r in runs),
        "log": "; ".join(r.log for r in runs),
        "skipped": False,
        "runs": [r.to_dict() for r in runs],
    }


def test_step(session: Session, job: BranchJob) -> bool:
    """Run the patch set's tests under the target's environment; False when it stopped."""
    rec = job.record
    options = session.options
    if options.skip_tests:
        job.update(status=Status.TESTED, test={
            "ran": None, "ok": None, "exit_code": None, "summary": "not run (--skip-tests)",
            "summary_lines": [], "skipped": True}, message="tests skipped on request")
        job.event("tested", "skipped (--skip-tests)")
        return True
    test = rec.get("test") or {}
    if (not options.force and rec["status"] in (Status.TESTED, Status.PUSHED)
            and test.get("ok") and test.get("commit") == rec["commit"]):
        job.event("tested", "kept the passing result of the previous run")
        return True
    bm = session.project.branch_map
    env = bm.environments[bm.targets[job.target].env]
    job.event("probe", env.name)
    try:
        probe = session.probe(env)
        if env.name in session.probes_reused:
            job.event("probe", f"{env.name}: reused an earlier probe (nothing it reads changed)")
    except BackportError as exc:
        job.fail(Status.ENV_MISSING, exc.message, env=env_record(session, env.name, None, "", False))
        return False
    mismatches = pin_mismatches(env, probe)
    if mismatches:
        job.fail(Status.ENV_MISMATCH,
                 f"environment '{env.name}' for {job.target} does not match its pins: "
                 f"{'; '.join(mismatches)}; the test was not run",
                 env=env_record(session, env.name, probe, "pins do not match", False), test=None,
                 mismatches=mismatches)
        return False
    verdict = device_verdict(probe, job.patch_set.device)
    env_rec = env_record(session, env.name, probe, verdict.note, verdict.autoload_off)
    if not verdict.runnable:
        job.fail(Status.ENV_UNAVAILABLE,
                 f"environment '{env.name}' for {job.target} cannot run a device: npu test: "
                 f"{verdict.note}",
                 env=env_rec, test=None)
        return False
    runner = session.runner(env, job.patch_set.device)
    path = Path(rec["worktree"])
    runs = []
    for index, spec in enumerate(job.patch_set.tests):
        job.event("testing", f"{spec.path} ({runner_kind(runner)})")
        started = time.monotonic()
        runs.append(runner.run(path, spec, log_path(job, index), timeout=options.timeout))
        job.event("testing", f"{spec.path} finished in {time.monotonic() - started:.1f}s "
                             f"({runner_kind(runner)})")
    result = test_record(runs)
    result["commit"] = rec["commit"]
    if result["ok"]:
        job.update(status=Status.TESTED, test=result, env=env_rec, message="")
        job.event("tested", result["summary"])
        return True
    code = result["exit_code"]
    said = result["summary"] if exit_stated(result["summary_lines"], code) else (
        f"{result['summary']} (exit {code})")
    job.fail(Status.TEST_FAILED, f"the test failed on {job.target}: {said}; log: {result['log']}",
             test=result, env=env_rec)
    return False


def runner_kind(runner: Any) -> str:
    return str(getattr(runner, "kind", "warm worker"))


# -- push -------------------------------------------------------------------------------------
def push_step(session: Session, job: BranchJob) -> bool:
    """Push the fork branch to the fork only, with a lease on what this tool last pushed."""
    rec = job.record
    bm = session.project.branch_map
    commit = rec["commit"]
    env = session.push_env()
    remote = remote_sha(bm.fork_url, job.fork_branch, env=env)
    ours = {sha for sha in (rec.get("pushed_sha"), rec.get("push_intent")) if sha}
    if remote == commit:
        job.update(status=Status.PUSHED, pushed_sha=commit, push_intent=None, fork_sha=None)
        job.event("pushed", f"{job.fork_branch} already at {commit[:9]}")
        return True
    if remote is not None and remote not in ours and not session.options.overwrite_fork_branch:
        last = rec.get("pushed_sha")
        job.fail(Status.FORK_DIVERGED,
                 f"fork branch '{job.fork_branch}' is at {remote[:9]}, which this tool did not push "
                 f"(it last pushed {last[:9] if last else 'nothing'}); it may hold someone's fix: "
                 f"compare it with {commit[:9]}, then rerun with --overwrite-fork-branch to "
                 f"replace it, or keep it and open the PR by hand", fork_sha=remote)
        return False
    if session.options.dry_run:
        session.plan(f"git push --force-with-lease={job.fork_branch}:{remote or ''} <fork> "
                     f"{commit[:9]}:refs/heads/{job.fork_branch}")
        job.update(status=Status.PLANNED, message="dry run: nothing pushed")
        return True
    job.event("pushing", f"{job.fork_branch} -> fork")
    job.update(push_intent=commit)
    try:
        push_branch(session.cache.path, bm.fork_url, commit, job.fork_branch, expect=remote, env=env)
    except BackportError as exc:
        output = exc.details.get("output")
        if not output:
            raise
        push_log = log_path(job, 0).with_suffix(".push.log")
        atomic_write_text(push_log, output)
        raise BackportError(exc.code, f"{exc.message.rstrip('.')}; git's output: {push_log}",
                            details=exc.details) from exc
    job.update(status=Status.PUSHED, pushed_sha=commit, push_intent=None, fork_sha=None)
    job.event("pushed", f"{job.fork_branch} @ {commit[:9]}")
    return True


# -- pull request -----------------------------------------------------------------------------
def pr_step(session: Session, job: BranchJob, all_targets: list[str]) -> None:
    """Find or create the PR for this fork branch, refresh its body, link the issue."""
    ps = job.patch_set
    opts = ps.pr
    bm = session.project.branch_map
    forge = session.forge()
    rec = job.record
    failed = (rec.get("test") or {}).get("ok") is False
    draft = failed or opts.draft  # from this run's result: a passing re-run clears the draft
    ctx = BodyContext(branch_map=bm, patch_set=ps, branches=job.journal.records(all_targets),
                      target=job.target, docs=session.docs(ps.api))
    job.event("pr", "looking for an open PR")
    pr = forge.find_open_pr(job.fork_branch, job.target)
    created = False
    if pr is None:
        body = render_body(ctx)
        pr = forge.create_pr(job.fork_branch, job.target, ps.title, body, draft=draft,
                             head_sha=rec.get("pushed_sha"),
                             close_related_issue=opts.close_related_issue)
        created = True
    else:
        body = render_body(ctx, existing=pr.body)
        if body != pr.body or pr.title != ps.title or pr.draft != draft:
            pr = forge.update_pr(pr.number, title=ps.title, body=body, draft=draft,
                                 close_related_issue=opts.close_related_issue)
    previous = rec.get("pr") or {}
    same_pr = not created and previous.get("number") == pr.number
    pr_info = {"number": pr.number, "url": pr.url, "decorated": False, "linked": False,
               "commented_sha": None}
    if same_pr:
        pr_info["decorated"] = previous.get("decorated", False)
        pr_info["commented_sha"] = previous.get("commented_sha")
    job.update(pr=pr_info)
    if ps.issue not in forge.linked_issues(pr.number):
        forge.link_issue(pr.number, ps.issue)
    pr_info["linked"] = True
    job.update(pr=pr_info)
    warnings = list(rec.get("warnings") or []) if pr_info["decorated"] else []
    pushed = rec.get("pushed_sha")
    if not pr_info["decorated"]:
        warnings = _decorate(forge, pr.number, opts)
        pr_info["decorated"] = True  # best-effort: a refusal is a warning, never retried
        if opts.comment:
            warnings += _comment(forge, pr.number, opts.comment, pr_info, pushed)
    elif (opts.comment and opts.comment_on_push and pushed
          and pr_info["commented_sha"] != pushed):
        # The branch of this open PR was force-pushed since the comment: ask CI again.
        warnings += _comment(forge, pr.number, opts.comment, pr_info, pushed)
    if forge.dry_run:
        final, message = Status.PLANNED, "dry run: no PR written"
    elif failed:
        final = Status.TEST_FAILED
        message = f"{rec.get('message', '')}; a draft PR shows the failure (--pr-on-failure)"
    else:
        final, message = Status.DONE, ""
    job.update(pr=pr_info, status=final, message=message, warnings=warnings)
    for warning in warnings:
        job.event("warning", warning)
    if final == Status.DONE:
        _drop_worktree(job)
    job.event("done" if final == Status.DONE else final.value, pr.url)


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


def _comment(forge: Forge, number: int, comment: str, pr_info: dict[str, Any],
             pushed: str | None) -> list[str]:
    """Post the configured comment (e.g. the CI trigger); a refusal is a warning."""
    try:
        forge.add_comment(number, comment)
    except BackportError as exc:
        return [f"comment {comment!r} not posted on PR !{number}: {exc.message}"]
    pr_info["commented_sha"] = pushed
    return []


def _drop_worktree(job: BranchJob) -> None:
    """A finished branch needs its worktree no more: the commit is on the fork and recorded."""
    path = job.record.get("worktree")
    if path and Path(path).exists():
        Worktree.open(Path(path)).remove()
    job.update(worktree=None)


def refresh_sibling_pr(session: Session, job: BranchJob, all_targets: list[str]) -> bool:
    """Bring a branch's open PR body up to date with what is true now.

    Every branch with a PR is refreshed, whatever its status: the other branches' results and
    PRs change, and a fork branch moved by someone else makes this PR's own evidence stale.
    Returns True when the body changed. Only the generated regions are rewritten.
    """
    rec = job.record
    pr_info = rec.get("pr") or {}
    if not pr_info.get("number"):
        return False
    forge = session.forge()
    pr = forge.get_pr(pr_info["number"])
    if pr.state != "open":
        return False
    ctx = BodyContext(branch_map=session.project.branch_map, patch_set=job.patch_set,
                      branches=job.journal.records(all_targets), target=job.target,
                      docs=session.docs(job.patch_set.api))
    body = render_body(ctx, existing=pr.body)
    if body == pr.body:
        return False
    forge.update_pr(pr.number, title=pr.title, body=body)
    job.event("pr", f"body of the {job.target} PR refreshed: {pr.url}")
    return True
