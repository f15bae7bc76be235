"""The PR step: find or open the fork branch's PR, make its body true, decorate it once, finish.

Each part reads alone: `open_or_update` (the PR and its body), `carried_over` (what the
journal knew of that PR), `decorate_once` (the best-effort writes: issue link, labels and
the like, the CI comment) and `finish` (the branch's end state and its worktree). Also the
refresh of a sibling's PR at the end of a run (`refresh_sibling_pr`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from backport.config.model import BranchMap, PatchSet, PrOptions
from backport.docs_audit import DocsEntry
from backport.errors import BackportError
from backport.forge import Forge, PullRequest
from backport.forge.base import is_refusal
from backport.git.worktree import Worktree, cache_branch
from backport.pipeline.job import BranchJob
from backport.pipeline.journal import Transition
from backport.pipeline.recorded_pr import (
    journal_number,
    judge_unverified,
    stop_if_replaced,
    title_to_send,
)
from backport.pipeline.set_run import SetRun
from backport.pipeline.shared_results import (
    SetOnForge,
    body_context,
    draft_implied,
    known,
    read_set,
    record_for,
)
from backport.records import BranchRecord, PrInfo
from backport.report.body import render_body
from backport.states import Status
from backport.titles import backport_title


@dataclass
class PrWrites:
    """What the PR step did to the PR so far: the PR, whether it was created, the warnings."""

    pr: PullRequest
    created: bool
    warnings: list[str] = field(default_factory=list)


def pr_step(run: SetRun, job: BranchJob) -> bool:
    """Find or create the PR for this fork branch, refresh its body, link the issue.

    An open PR of the fork branch is found again, never duplicated; it is decorated once, and
    commented again only when its branch was pushed since (``comment_on_push``). Where the
    run is partial (some branches of the set run elsewhere) the other branches' results are
    read from their own PRs first. The issue link, decorations and comment are
    best-effort: a refusal is a warning, recorded and not retried. A branch whose wrong PR
    backport closed once gets no second PR; nor does one whose recorded PR was closed or
    merged, unless ``--new-pr``. A PR opened but never read back is judged first.
    """
    forge, bm = run.session.forge.client(), run.branch_map
    docs = run.session.docs(job.patch_set.api)
    judge_unverified(job, forge)
    rec = job.record
    writes = open_or_update(job, forge, docs, bm, list(job.patch_set.branches),
                            read_siblings=run.partial, new_pr=run.options.new_pr)
    info = carried_over(rec, writes, pr_title(job, bm))
    job.change(lambda r: r.with_pr(info))
    kept = ([w for w in rec.warnings if not _said_again(w, info, job.patch_set.issues)]
            if rec.pr is not None and rec.pr.number == info.number and not writes.created else [])
    if not info.decorated:
        kept = []  # a first decoration says afresh what the forge refused
    info = decorate_once(job, forge, info, writes.warnings)
    writes.warnings.extend(_closed_issues(forge, job.patch_set.issues, writes.pr))
    finish(job, forge, writes, info, kept, run.session.cache.path, run.session.project.state_dir)
    return True


def open_or_update(job: BranchJob, forge: Forge, docs: Sequence[DocsEntry] | None,
                   bm: BranchMap, all_targets: list[str], *, read_siblings: bool,
                   new_pr: bool = False) -> PrWrites:
    """The fork branch's open PR with a current body, draft state and title (the set's title
    only when it changed since the last run); created when there is none."""
    ps, rec = job.patch_set, job.record
    draft = draft_implied(rec, ps)  # from this run's result: a passing re-run clears the draft
    state = read_set(forge, ps, bm) if read_siblings else None
    ctx = body_context(ps, bm, job.journal.records(all_targets), job.target, docs, state,
                       own_from_journal=True)
    job.event("pr", "looking for an open PR")
    pr = forge.find_open_pr(job.fork_branch, job.target)
    if pr is None:
        writes = PrWrites(_create(job, forge, pr_title(job, bm), render_body(ctx), draft, new_pr),
                          created=True)
        writes.warnings.extend(_not_taken(writes.pr))
        return writes
    writes = PrWrites(pr, created=False)
    body = render_body(ctx, existing=pr.body)
    title = title_to_send(job, pr, pr_title(job, bm))
    if body != pr.body or pr.title != title or pr.draft != draft:
        writes.pr = forge.update_pr(pr.number, title=title, body=body, draft=draft,
                                    close_related_issue=ps.pr.close_related_issue)
        writes.warnings.extend(_not_taken(writes.pr))
    return writes


def _not_taken(pr: PullRequest) -> list[str]:
    """A warning naming the fields the forge did not take (sent as JSON and as a form)."""
    if not pr.not_taken:
        return []
    return [f"PR !{pr.number} did not take the new {', '.join(pr.not_taken)} (sent as JSON "
            f"and as a form); check it on {pr.url}"]


def pr_title(job: BranchJob, bm: BranchMap) -> str:
    """The title of the branch's PR: the set's, without the source PR's branch tags, with the
    target's ``title_tag`` where the map gives one (``titles.backport_title``)."""
    ps, target = job.patch_set, bm.targets.get(job.target)
    return backport_title(ps.title, source=ps.source.base if ps.source else None,
                          target=job.target, tag=target.title_tag if target else None)


def _create(job: BranchJob, forge: Forge, title: str, body: str, draft: bool,
            new_pr: bool) -> PullRequest:
    """Open the PR (not where the recorded one was closed or merged, unless ``new_pr``); its
    number is journaled as soon as the forge answers it, and a PR the forge opened wrong (and
    backport closed) is journaled too."""
    ps, rec = job.patch_set, job.record
    if rec.closed_prs:
        raise BackportError(
            "forge", f"backport closed PR !{rec.closed_prs[-1]} for {job.fork_branch} in an "
                     "earlier run because the forge opened it from another repository or "
                     "branch, and opens no second one: open the PR from the fork branch by "
                     "hand, then run again to fill it in.")
    stop_if_replaced(job, forge, new_pr=new_pr)
    try:
        pr = forge.create_pr(job.fork_branch, job.target, title, body, draft=draft,
                             head_sha=rec.pushed_sha,
                             close_related_issue=ps.pr.close_related_issue,
                             on_number=journal_number(job))
    except BackportError as exc:
        if exc.details.get("closed") is True:
            closed = int(exc.details["number"])
            job.change(lambda r: r.pr_closed(closed))
        raise
    return pr


def carried_over(rec: BranchRecord, writes: PrWrites, set_title: str) -> PrInfo:
    """The PR's journal entry: what the journal knew of this same PR (link, decorations,
    comment, refusals) carries over; a new or other PR starts afresh. ``set_title``: the
    set's title this run (a later change of it is sent to the PR)."""
    pr = writes.pr
    previous = rec.pr if rec.pr and not writes.created and rec.pr.number == pr.number else None
    return PrInfo(number=pr.number, url=pr.url,
                  decorated=bool(previous and previous.decorated),
                  linked=bool(previous and previous.linked),
                  commented_sha=previous.commented_sha if previous else None,
                  refused=previous.refused if previous else (), title=set_title)


def decorate_once(job: BranchJob, forge: Forge, info: PrInfo, warnings: list[str]) -> PrInfo:
    """The best-effort writes, each journaled at once: link the issue, add labels, assignees,
    reviewers and testers, post the CI comment. A refusal is added to ``warnings`` and never
    retried; the comment is journaled before it is posted, so a run killed right after the
    post does not post it again."""
    ps, opts, number = job.patch_set, job.patch_set.pr, info.number
    if not info.linked and "link" not in info.refused:
        failed, refusal = _link(forge, number, ps.issues)
        warnings.extend([failed] if failed else [])
        if failed is None:
            info = info.link_made()
        elif refusal:
            info = info.refusing("link")
        job.change(_with_pr(info))
    pushed = job.record.pushed_sha
    comment = False
    if not info.decorated:
        warnings.extend(_decorate(forge, number, opts))
        info = info.decorations_made()  # best-effort: never retried
        comment = bool(opts.comment)
    elif (opts.comment and opts.comment_on_push and pushed
          and info.commented_sha != pushed and "comment" not in info.refused):
        comment = True  # the branch of this open PR was force-pushed since the comment
    if not comment:
        return info
    before, info = info, info.commented(pushed)
    job.change(_with_pr(info))
    refused = _comment(forge, number, opts.comment)
    if refused:
        warnings.append(refused)
        info = before.refusing("comment")
        job.change(_with_pr(info))
    return info


def _with_pr(info: PrInfo) -> Transition:
    return lambda r: r.with_pr(info)


def finish(job: BranchJob, forge: Forge, writes: PrWrites, info: PrInfo,
           kept: list[str], cache: Path, state_dir: Path) -> None:
    """The branch's end state (done, planned, or a failed test shown by a draft), the
    warnings said once, and the worktree of a finished branch removed (from ``cache``)."""
    rec = job.record
    if writes.pr.planned or rec.status == Status.PLANNED:  # a dry forge's PR, a dry push
        final, message = Status.PLANNED, "dry run: no PR written"
    elif rec.test is not None and rec.test.ok is False:
        final = Status.TEST_FAILED
        message = f"{rec.message}; a draft PR shows the failure (--pr-on-failure)"
    else:
        final, message = Status.DONE, ""
    all_warnings = list(dict.fromkeys([*kept, *writes.warnings]))
    job.change(lambda r: r.finished(final, message, info, all_warnings))
    for warning in writes.warnings:
        job.event("warning", warning)
    if final == Status.DONE:
        _drop_worktree(job, cache, state_dir)
    job.event("done" if final == Status.DONE else final.value, writes.pr.url)


def _issues_said(issues: tuple[int, ...]) -> str:
    return ", ".join(f"#{i}" for i in issues)


def _link(forge: Forge, number: int, issues: tuple[int, ...]) -> tuple[str | None, bool]:
    """Link the patch set's issues (none: nothing to do); a failure is returned as a warning
    (the PR stays open) and whether it was a refusal (403/404: not tried again; anything
    else: the next run tries)."""
    try:
        forge.link_issues(number, issues)
    except BackportError as exc:
        refusal = is_refusal(exc)
        again = "not tried again" if refusal else "tried again on the next run"
        return (f"issue {_issues_said(issues)} not linked to PR !{number} (the PR is open "
                f"without the link; {again}): {exc.message}"), refusal
    return None, False


def _said_again(warning: str, info: PrInfo, issues: tuple[int, ...]) -> bool:
    """Whether this run says ``warning`` afresh if it still holds (so the old one goes)."""
    number = info.number
    closed = tuple(f"issue #{i} is closed while" for i in issues)
    return (warning.startswith((f"PR !{number} did not take", *closed))
            or (warning.startswith(f"issue {_issues_said(issues)} not linked to PR !{number}")
                and "link" not in info.refused))


def _closed_issues(forge: Forge, issues: tuple[int, ...], pr: PullRequest) -> list[str]:
    """A warning for each of the set's issues closed while this PR is open (a sibling's merge
    may have closed it for all of them)."""
    if pr.state != "open":
        return []
    return [f"issue #{issue} is closed while PR !{pr.number} is open; reopen it if the "
            "backports are not all merged" for issue in issues
            if forge.issue_state(issue) == "closed"]


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


def _drop_worktree(job: BranchJob, cache: Path, state_dir: Path) -> None:
    """A finished branch needs its worktree no more: the commit is on the fork and recorded.
    Removed without reading it (its tests ran there): its folder, its registration in the
    ``cache`` repository, its branch there."""
    if job.record.worktree:
        Worktree.discard(cache, Path(job.record.worktree),
                         cache_branch(state_dir, job.fork_branch))
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
    if not known(records, state, job.target) or not _out_of_date(listed, ps, bm, records,
                                                                 job.target, docs, state, ran):
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
    # draft only where it changes: a draft sent is read back unless the answer shows it
    forge.update_pr(pr.number, title=pr.title, body=body,
                    draft=draft if draft != pr.draft else None)
    job.event("pr", f"body of the {job.target} PR refreshed: {pr.url}")
    return True


def _out_of_date(pr: PullRequest, ps: PatchSet, bm: BranchMap, records: list[BranchRecord],
                 target: str, docs: Sequence[DocsEntry] | None, state: SetOnForge,
                 ran: frozenset[str]) -> bool:
    """True when the PR as listed differs from what it should show (body regions or draft)."""
    ctx = body_context(ps, bm, records, target, docs, state, own_from_journal=False, ran=ran)
    return (render_body(ctx, existing=pr.body) != pr.body
            or pr.draft != draft_implied(record_for(records, state, target, ran), ps))
