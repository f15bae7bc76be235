"""The PR the journal recorded for a branch, consulted before the PR step writes anything.

A PR whose number the create answered but that was never read back is judged first; a PR a
maintainer closed, or one merged meanwhile, is never replaced unless the user asks
(``apply --new-pr``); the set's title is sent only when the set's title changed since the
last run, so a maintainer's edit of the PR's title survives.
"""

from __future__ import annotations

from collections.abc import Callable

from backport.errors import BackportError
from backport.forge import Forge, PullRequest
from backport.pipeline.job import BranchJob
from backport.records import PrInfo


def journal_number(job: BranchJob) -> Callable[[int], None]:
    """For ``create_pr(on_number=…)``: journal the new PR's number at once, unverified."""
    def record(number: int) -> None:
        job.change(lambda r: r.with_pr(PrInfo.opened(number)))
    return record


def judge_unverified(job: BranchJob, forge: Forge) -> None:
    """A PR opened by an earlier run but never read back: judge it now, before anything else
    (kept, or closed when it came from the wrong source)."""
    recorded = job.record.pr
    if recorded is None or not recorded.unverified:
        return
    try:
        pr = forge.verify_pr(recorded.number, job.fork_branch, job.target,
                             head_sha=job.record.pushed_sha)
    except BackportError as exc:
        if exc.details.get("closed") is True:
            settled(job, recorded.number)
        raise
    job.change(lambda r: r.with_pr(recorded.judged(pr.url)))


def settled(job: BranchJob, closed: int) -> None:
    """The PR ``closed`` was closed as wrong: recorded so (and so judged)."""
    job.change(lambda r: r.pr_closed(closed))


def stop_if_replaced(job: BranchJob, forge: Forge, *, new_pr: bool) -> None:
    """Before a create: when the PR the journal recorded was closed or merged, stop this
    branch with one sentence, unless ``new_pr`` asks for another PR."""
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


def title_to_send(job: BranchJob, pr: PullRequest, set_title: str) -> str:
    """The set's title when it changed since the last run; else the PR's own title (which a
    maintainer may have edited; also when no run recorded the set's title for this PR)."""
    recorded = job.record.pr
    last = recorded.title if recorded is not None and recorded.number == pr.number else None
    return set_title if last is not None and last != set_title else pr.title
