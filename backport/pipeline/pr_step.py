"""The PR step, the set as the forge shows it, the refresh of its PRs, the source PR's summary.

The PR step finds or opens the fork branch's PR, makes its body true, makes the best-effort
writes once (a refusal is a warning, never retried) and ends the branch. A PR closed or merged
is never replaced unless ``--new-pr``; the title is sent only when the set's changed.
Hosts share results through the forge: each open PR carries its branch's record as one hidden
JSON line (``report/regions.py``). A body takes a branch from the journal where the journal
states the result the PR shows, has a result of this run, or of a fork head the PR does not
show yet; else from the PR's record. A PR with no record is rewritten only by a host whose
journal has the branch. The source PR's summary is one comment found by its marker AND its
author (the token's user); anyone else's is never edited, read or counted.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from backport.config.model import BranchMap, PatchSet, PrOptions
from backport.errors import BackportError
from backport.forge import Comment, Forge, PullRequest
from backport.forge.base import is_refusal
from backport.git.cache import remote_shas
from backport.git.worktree import Worktree, cache_branch
from backport.pipeline.session import BranchJob, Session, SetRun
from backport.records import BranchRecord, PrInfo
from backport.report.regions import read_line
from backport.states import Status
from backport.titles import backport_title

if TYPE_CHECKING:
    from backport.docs_audit import DocsEntry
    from backport.report.body import BodyContext


log = logging.getLogger(__name__)


def render_body(ctx: BodyContext, existing: str | None = None) -> str:
    from backport.report.body import render_body as render  # loaded only when a run writes one

    return render(ctx, existing)


@dataclass(frozen=True)
class SetOnForge:
    """The open PRs of one patch set's fork branches, the records they carry and fork heads."""

    prs: dict[str, PullRequest] = field(default_factory=dict)  # target -> its open PR
    shared: dict[str, BranchRecord] = field(default_factory=dict)  # target -> its PR's record
    heads: dict[str, str | None] = field(default_factory=dict)  # target -> fork branch head
    lines: dict[str, dict] = field(default_factory=dict)  # target -> the JSON of that record

    def with_pr(self, target: str, pr: PullRequest) -> SetOnForge:
        """This state with ``target``'s PR as just read (its record taken from it)."""
        shared = {t: r for t, r in self.shared.items() if t != target}
        lines = {t: r for t, r in self.lines.items() if t != target}
        if (read := read_line(pr.body, target=target, fork_branch=pr.head)) is not None:
            shared[target], lines[target] = read
        return dataclasses.replace(self, prs={**self.prs, target: pr}, shared=shared,
                                   lines=lines)


def read_set(forge: Forge, ps: PatchSet, bm: BranchMap, *, fresh: bool = True) -> SetOnForge:
    """The set's open PRs (not ``fresh``: as last listed), their records, the fork's heads."""
    by_branch = {ps.fork_branch(bm, target): target for target in ps.branches}
    prs: dict[str, PullRequest] = {}
    for pr in forge.list_prs("open", fresh=fresh):
        target = by_branch.get(pr.head)
        if (target is None or pr.base != target or pr.state != "open"
                or pr.head_repo.casefold() != bm.fork.casefold()):
            continue
        if target not in prs or pr.number < prs[target].number:
            prs[target] = pr
    for target, pr in prs.items():
        if read_line(pr.body, target=target, fork_branch=pr.head) is None:
            prs[target] = forge.get_pr(pr.number)
    heads: dict[str, str | None] = {}
    if prs:
        branches = {ps.fork_branch(bm, target): target for target in prs}
        try:
            found = remote_shas(bm.fork_url, list(branches),
                                env=forge.push_credentials(bm.fork_url))
            heads = {branches[branch]: sha for branch, sha in found.items()}
        except BackportError:
            pass  # the evidence's own head stands
    state = SetOnForge(heads=heads)
    for target, pr in prs.items():
        state = state.with_pr(target, pr)
    return state


def _journal_states_it(rec: BranchRecord, shown: BranchRecord, head: str | None) -> bool:
    """The journal states the result the PR shows, or one of a fork head the PR does not show."""
    if rec.test is None:
        return False
    tested = rec.test.commit or rec.pushed_sha or rec.commit  # a skipped test: the commit pushed
    test = shown.test  # the PR shows the result of its tested commit, else of its head
    shown_tested = (test.commit if test and not test.skipped and test.commit else None) or shown.head
    if tested == shown_tested and (rec.fork_sha or rec.pushed_sha) == shown.head:
        return True
    return head is not None and tested == head and shown_tested != head


def body_records(records: list[BranchRecord], state: SetOnForge, *, own: str | None = None,
                 ran: frozenset[str] = frozenset()) -> tuple[list[BranchRecord], frozenset[str]]:
    """The records a body renders, and the branches whose record was read from their PR."""
    chosen: list[BranchRecord] = []
    read_back: set[str] = set()
    journaled = {rec.target for rec in records}
    never_run_here = [BranchRecord(target, pr.head) for target, pr in state.prs.items()
                      if target not in journaled]
    for rec in [*records, *never_run_here]:
        pr = state.prs.get(rec.target)
        shown = state.shared.get(rec.target)
        head = state.heads.get(rec.target)
        if (rec.target == own or shown is None or (rec.target in ran and rec.test)
                or _journal_states_it(rec, shown, head)):
            if pr is not None and rec.pr is None:
                rec = rec.with_pr(PrInfo(number=pr.number, url=pr.url))
            if rec.target != own and head and head != (rec.fork_sha or rec.pushed_sha) \
                    and rec.pushed_sha:
                rec = rec.fork_moved(head)
            chosen.append(rec)
            continue
        assert pr is not None
        read = shown.read_from_pr(pr.number, pr.url)
        if head and head != shown.head:
            read = read.fork_moved(head)  # moved since the record was written
        chosen.append(read)
        read_back.add(rec.target)
    return chosen, frozenset(read_back)


def body_context(ps: PatchSet, bm: BranchMap, records: list[BranchRecord], target: str,
                 docs: Sequence[DocsEntry] | None, state: SetOnForge | None, *,
                 own_from_journal: bool, ran: frozenset[str] = frozenset()) -> BodyContext:
    """The context of ``target``'s body, every branch as the forge shows it."""
    from backport.report.body import BodyContext

    branches, read_back = (records, frozenset()) if state is None else body_records(
        records, state, own=target if own_from_journal else None, ran=ran)
    return BodyContext(branch_map=bm, patch_set=ps, branches=branches, target=target, docs=docs,
                       kept=state.lines.get(target) if state and target in read_back else None)


def draft_implied(rec: BranchRecord | None, ps: PatchSet) -> bool:
    """Draft when the test failed, its result does not validate the change, or the set asks."""
    test = rec.test if rec is not None else None
    return bool(test and (test.ok is False or test.not_in_build)) or ps.pr.draft


def forge_records(forge: Forge, ps: PatchSet, bm: BranchMap) -> tuple[SetOnForge, dict[str, BranchRecord]]:
    """The set as the forge shows it, with no journal (`status --from-forge`)."""
    state = read_set(forge, ps, bm)
    return state, {rec.target: rec for rec in body_records([], state)[0]}


def forge_status(session: Session, patch_sets: Sequence[PatchSet],
                 chosen: dict[str, list[str]]) -> list[tuple[PatchSet, list[dict]]]:
    """Each chosen branch of ``patch_sets`` as its open PR shows it (`status --from-forge`)."""
    session.follow_token()  # where the fork follows the token, its PRs are the login's
    forge, shown = session.forge.real(), []
    for ps in patch_sets:
        state, records = forge_records(forge, ps, session.project.branch_map)
        shown.append((ps, [_forge_row(target, state.prs.get(target),
                                      records.get(target) if target in state.shared else None)
                           for target in chosen[ps.name]]))
    return shown


def _forge_row(target: str, pr: PullRequest | None, record: BranchRecord | None) -> dict:
    """One branch as its open PR shows it (``record``: the one its body carried)."""
    from backport.report.summary import test_result, test_state  # status's alone

    test = record.test if record else None
    head = (record.fork_sha or record.pushed_sha) if record else None
    tested = (test.commit if test else None) or None
    state, because = test_state(record) if record else (None, None)
    return {
        "target": target,
        "pr": None if pr is None else {"number": pr.number, "url": pr.url, "draft": pr.draft},
        "status": record.status.value if record else None,
        "result": (test_result(record) if record else
                   "no open PR" if pr is None else "no evidence block in the PR body"),
        "ok": test.ok if test else None,
        "test_state": state,
        "skipped_because": because,
        "tested_commit": tested,
        "head_commit": head,
        "stale": bool(test and tested and head and tested != head),
        "platform": record.env.fact("platform") if record and record.env else None,
        "environment": record.env.name if record and record.env else None,
    }


def pr_step(run: SetRun, job: BranchJob) -> bool:
    """Find or open the fork branch's PR, make its body true, decorate it once, finish."""
    forge = run.session.forge.client()
    judge_unverified(job, forge)
    rec = job.record
    pr, created, warnings = open_or_update(run, job, forge)
    # what the journal knew of this same PR carries over
    previous = rec.pr if rec.pr and not created and rec.pr.number == pr.number else None
    info = PrInfo(number=pr.number, url=pr.url, decorated=bool(previous and previous.decorated),
                  linked=bool(previous and previous.linked),
                  commented_sha=previous.commented_sha if previous else None,
                  refused=previous.refused if previous else (), title=pr_title(job, run.branch_map))
    job.change(lambda r: r.with_pr(info))
    kept = ([w for w in rec.warnings if not _said_again(w, info, job.patch_set.issues)]
            if previous is not None and info.decorated else [])  # else all is said afresh
    info = decorate_once(job, forge, info, warnings)
    warnings.extend(_closed_issues(forge, job.patch_set.issues, pr))
    finish(run, job, pr, info, kept, warnings)
    return True


def open_or_update(run: SetRun, job: BranchJob,
                   forge: Forge) -> tuple[PullRequest, bool, list[str]]:
    """The fork branch's open PR with a current body, draft and title (created if missing),
    whether it was created, and the warnings of those writes."""
    ps, rec, bm = job.patch_set, job.record, run.branch_map
    draft = draft_implied(rec, ps)  # from this run's result: a passing re-run clears the draft
    state = read_set(forge, ps, bm) if run.partial else None  # the others' results from PRs
    ctx = body_context(ps, bm, job.journal.records(list(ps.branches)), job.target,
                       run.session.docs(ps.api), state, own_from_journal=True)
    job.event("pr", "looking for an open PR")
    pr = forge.find_open_pr(job.fork_branch, job.target)
    created = pr is None
    if pr is None:
        pr = _create(job, forge, pr_title(job, bm), render_body(ctx), draft, run.options.new_pr)
    else:
        body = render_body(ctx, existing=pr.body)
        last = rec.pr.title if rec.pr is not None and rec.pr.number == pr.number else None
        set_title = pr_title(job, bm)  # sent only when it changed, so a maintainer's edit stays
        title = set_title if last is not None and last != set_title else pr.title
        if body == pr.body and pr.title == title and pr.draft == draft:
            return pr, False, []
        pr = forge.update_pr(pr.number, title=title, body=body, draft=draft,
                             close_related_issue=ps.pr.close_related_issue)
    untaken = [f"PR !{pr.number} did not take the new {', '.join(pr.not_taken)} (sent as JSON "
               f"and as a form); check it on {pr.url}"] if pr.not_taken else []
    return pr, created, untaken


def pr_title(job: BranchJob, bm: BranchMap) -> str:
    """The set's title without the source PR's branch tags, with the target's ``title_tag``."""
    ps, target = job.patch_set, bm.targets.get(job.target)
    return backport_title(ps.title, source=ps.source.base if ps.source else None,
                          target=job.target, tag=target.title_tag if target else None)


def _create(job: BranchJob, forge: Forge, title: str, body: str, draft: bool,
            new_pr: bool) -> PullRequest:
    """Open the PR, journaling its number as soon as the forge answers (or its closing)."""
    ps, rec = job.patch_set, job.record
    if rec.closed_prs:
        raise BackportError(
            "forge", f"backport closed PR !{rec.closed_prs[-1]} for {job.fork_branch} in an "
                     "earlier run because the forge opened it from another repository or "
                     "branch, and opens no second one: open the PR from the fork branch by "
                     "hand, then run again to fill it in.")
    stop_if_replaced(job, forge, new_pr=new_pr)

    def journal_number(number: int) -> None:
        job.change(lambda r: r.with_pr(PrInfo.opened(number)))  # unverified until read back

    try:
        return forge.create_pr(job.fork_branch, job.target, title, body, draft=draft,
                               head_sha=rec.pushed_sha,
                               close_related_issue=ps.pr.close_related_issue,
                               on_number=journal_number)
    except BackportError as exc:
        if exc.details.get("closed") is True:
            closed = int(exc.details["number"])
            job.change(lambda r: r.pr_closed(closed))
        raise


def decorate_once(job: BranchJob, forge: Forge, info: PrInfo, warnings: list[str]) -> PrInfo:
    """The best-effort writes, each journaled first; a refusal is a warning, never retried."""
    opts, number = job.patch_set.pr, info.number
    if not info.linked and "link" not in info.refused:
        failed, refusal = _link(forge, number, job.patch_set.issues)
        warnings.extend([failed] if failed else [])
        info = info.link_made() if failed is None else info.refusing("link") if refusal else info
        job.change(lambda r: r.with_pr(info))
    pushed = job.record.pushed_sha
    if not info.decorated:
        warnings.extend(_decorate(forge, number, opts))
        info = info.decorations_made()  # best-effort: never retried
        comment = bool(opts.comment)
    else:  # the branch of this open PR was force-pushed since the comment
        comment = bool(opts.comment and opts.comment_on_push and pushed
                       and info.commented_sha != pushed and "comment" not in info.refused)
    if not comment:
        return info
    before, info = info, info.commented(pushed)
    job.change(lambda r: r.with_pr(info))
    try:
        forge.add_comment(number, opts.comment or "")
    except BackportError as exc:
        warnings.append(f"comment {opts.comment!r} not posted on PR !{number} (not tried "
                        f"again): {exc.message}")
        info = before.refusing("comment")
        job.change(lambda r: r.with_pr(info))
    return info


def finish(run: SetRun, job: BranchJob, pr: PullRequest, info: PrInfo, kept: list[str],
           warnings: list[str]) -> None:
    """The branch's end state and its warnings (``kept``: an earlier run's), each said once;
    a done branch's worktree goes."""
    rec = job.record
    if pr.planned or rec.status == Status.PLANNED:  # a dry forge's PR, a dry push
        final, message = Status.PLANNED, "dry run: no PR written"
    elif rec.test is not None and rec.test.ok is False:
        final = Status.TEST_FAILED
        message = f"{rec.message}; a draft PR shows the failure (--pr-on-failure)"
    else:
        final, message = Status.DONE, ""
    all_warnings = list(dict.fromkeys([*kept, *warnings]))
    job.change(lambda r: r.finished(final, message, info, all_warnings))
    for warning in warnings:
        job.event("warning", warning)
    if final == Status.DONE:
        if job.record.worktree:
            Worktree.discard(run.session.cache.path, Path(job.record.worktree),
                             cache_branch(run.session.project.state_dir, job.fork_branch))
        job.change(BranchRecord.worktree_removed)
    job.event("done" if final == Status.DONE else final.value, pr.url)


def _link(forge: Forge, number: int, issues: tuple[int, ...]) -> tuple[str | None, bool]:
    """Link the set's issues; a failure as a warning, and whether it was a refusal."""
    try:
        forge.link_issues(number, issues)
    except BackportError as exc:
        refusal = is_refusal(exc)
        again = "not tried again" if refusal else "tried again on the next run"
        said = ", ".join(f"#{i}" for i in issues)
        return (f"issue {said} not linked to PR !{number} (the PR is open "
                f"without the link; {again}): {exc.message}"), refusal
    return None, False


def _said_again(warning: str, info: PrInfo, issues: tuple[int, ...]) -> bool:
    """Whether this run says ``warning`` afresh if it still holds (so the old one goes)."""
    number, said = info.number, ", ".join(f"#{i}" for i in issues)
    closed = tuple(f"issue #{i} is closed while" for i in issues)
    return (warning.startswith((f"PR !{number} did not take", *closed))
            or (warning.startswith(f"issue {said} not linked to PR !{number}")
                and "link" not in info.refused))


def _closed_issues(forge: Forge, issues: tuple[int, ...], pr: PullRequest) -> list[str]:
    """A warning for each of the set's issues closed while this PR is open."""
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


def refresh_sibling_pr(job: BranchJob, forge: Forge, docs: Sequence[DocsEntry] | None, bm: BranchMap,
                       all_targets: list[str], state: SetOnForge,
                       ran: frozenset[str] = frozenset()) -> bool:
    """Re-render a branch's open PR over its body as it is now; True when it was updated."""
    listed = state.prs.get(job.target)
    records = job.journal.records(all_targets)
    # rendered from facts alone: the PR carries a record, or the journal has the branch
    if listed is None or (job.target not in state.shared
                          and not any(rec.target == job.target for rec in records)):
        return False
    if _wanted(job, listed, bm, records, docs, state, ran) == (listed.body, listed.draft):
        return False
    pr = forge.current_pr(listed.number)
    if pr.state != "open":
        return False
    state = state.with_pr(job.target, pr)
    body, draft = _wanted(job, pr, bm, records, docs, state, ran)
    if body == pr.body and pr.draft == draft:
        return False
    # draft only where it changes: a draft sent is read back unless the answer shows it
    forge.update_pr(pr.number, title=pr.title, body=body,
                    draft=draft if draft != pr.draft else None)
    job.event("pr", f"body of the {job.target} PR refreshed: {pr.url}")
    return True


def _wanted(job: BranchJob, pr: PullRequest, bm: BranchMap, records: list[BranchRecord],
            docs: Sequence[DocsEntry] | None, state: SetOnForge,
            ran: frozenset[str]) -> tuple[str, bool]:
    """The body and draft state a sibling's PR should have, over its body as ``pr`` shows it."""
    ps, target = job.patch_set, job.target
    ctx = body_context(ps, bm, records, target, docs, state, own_from_journal=False, ran=ran)
    own = next((rec for rec in ctx.branches if rec.target == target), None)
    return render_body(ctx, existing=pr.body), draft_implied(own, ps)


def judge_unverified(job: BranchJob, forge: Forge) -> None:
    """A PR an earlier run opened but never read back: kept, or closed if from elsewhere."""
    recorded = job.record.pr
    if recorded is None or not recorded.unverified:
        return
    try:
        pr = forge.verify_pr(recorded.number, job.fork_branch, job.target,
                             head_sha=job.record.pushed_sha)
    except BackportError as exc:
        if exc.details.get("closed") is True:
            job.change(lambda r: r.pr_closed(recorded.number))
        raise
    job.change(lambda r: r.with_pr(recorded.judged(pr.url)))


def stop_if_replaced(job: BranchJob, forge: Forge, *, new_pr: bool) -> None:
    """Before a create: stop where the recorded PR was closed or merged, unless ``new_pr``."""
    recorded = job.record.pr
    if recorded is None or new_pr:
        return
    try:
        pr = forge.get_pr(recorded.number)
    except BackportError as exc:
        if exc.details.get("not_found"):
            return  # gone from the forge: nothing to keep
        raise
    if pr.state in ("closed", "merged"):
        raise BackportError(
            "forge", f"PR !{pr.number} of {job.fork_branch} ({pr.url}) was {pr.state} on the "
                     "forge, so backport opens no other PR for this branch; run apply with "
                     "--new-pr to open a new one.",
            details={"number": pr.number, "url": pr.url, "state": pr.state})


def write_source_summary(forge: Forge, ps: PatchSet, bm: BranchMap, records: list[BranchRecord],
                         ran: frozenset[str]) -> str | None:
    """Post or edit our one summary comment on the source PR; a warning if the forge refused."""
    from backport.report.summary import MARKER, render_summary  # a real run's alone

    if ps.source is None:
        return None
    number = ps.source.number
    try:
        # a whole-set run's own writes keep the forge's listing current (as for the refresh)
        state = read_set(forge, ps, bm, fresh=bool(set(ps.branches) - ran))
        chosen, _ = body_records(records, state, ran=ran)
        me = forge.current_user()
        found = _ours_marked(forge, number, MARKER, me)
        posted = None
        if not found:
            posted = forge.post_comment(number, render_summary(ps, bm, chosen, None))
            found = _ours_marked(forge, number, MARKER, me) or [posted]
        oldest = found[0]
        if posted is None or oldest.id != posted.id:  # none posted, or another runner's too
            body = render_summary(ps, bm, chosen, oldest.body)
            if oldest.body.strip() != body.strip():
                forge.edit_comment(number, oldest.id, body)
            if posted is not None:
                forge.delete_comment(number, posted.id)
    except BackportError as exc:
        text = (f"summary comment on the source PR !{number} not written "
                f"(the backports are not affected): {exc.message.rstrip('.')}")
        log.warning("%s", text)
        return text
    return None


def _ours_marked(forge: Forge, number: int, marker: str, me: str) -> list[Comment]:
    """Our comments holding ``marker``, oldest first."""
    return [c for c in forge.list_comments(number)
            if marker in c.body and c.author.casefold() == me.casefold()]
