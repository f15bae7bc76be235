"""The steps that stop a branch of a set made from PR N where another PR carries N into it.

`carries` (a PR) and `commit_carries` (a commit, for the audit) read only the forms the sync
bot, GitCode's cherry-pick or this tool write; a mention ("cf. !N") carries nothing. `counts`
says whether such a PR may stop the branch: a bot's branch in the upstream itself, a PR by a
user with write permission, or one whose commits carry the change (``patch-id``). Anyone
else's PR, and the set's own, never block. `proposed_step` runs before apply; `same_fix_step`
after it stops a branch whose whole change is that of a set run before it in the batch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import partial

from backport.config.model import BranchMap
from backport.forge import PullRequest
from backport.git.apply import carries_change, patch_ids
from backport.git.run import git
from backport.numerals import DIGITS
from backport.numerals import number as bounded
from backport.pipeline.session import BranchJob, SetRun
from backport.records import BranchRecord, ProposedPr
from backport.report.wording import SOURCE
from backport.states import Status

# The forms a PR or commit carries a source PR by, as the terminal says them.
SYNC, CHERRY_PICK, BACKPORT = "sync", "cherry-pick", "backport"
KIND_EN = {SYNC: "the sync bot's PR", CHERRY_PICK: "GitCode's cherry-pick",
           BACKPORT: "a backport PR"}

_SYNC_TITLE = re.compile(rf"^\s*\[sync\]\s*PR-({DIGITS})(?![0-9])", re.IGNORECASE)
_SYNC_HEAD = re.compile(rf"^sync-pr({DIGITS})-(.+)$")
_CHERRY_PICK = re.compile(rf"^cherry-pick-mr-({DIGITS})-[0-9]+-auto$")
_REPO = r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
# This tool's forms: a backport PR's evidence line, a backport commit's last paragraph.
_SOURCE_LINE = re.compile(rf"^{re.escape(SOURCE.key)}=({_REPO})!({DIGITS})@[0-9a-f]{{40}}$",
                          re.MULTILINE)
_TOOL_TRAILER = re.compile(rf"Backport of ({_REPO})!({DIGITS})\.\n"
                           rf"\(cherry picked from commit [0-9a-f]{{40}}\)")


def _same_repo(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def head_carries(head: str, target: str) -> dict[int, str]:
    """The PR a bot's head branch (``sync-pr<N>-…``, ``cherry-pick-mr-<N>-…``) carries."""
    if (sync := _SYNC_HEAD.match(head)) is not None:
        rest, tail, found = sync.group(2), f"-to-{target}", bounded(sync.group(1))
        into_target = rest == target or (rest.endswith(tail) and len(rest) > len(tail))
        return {found: SYNC} if found is not None and into_target else {}
    picked = _CHERRY_PICK.match(head)
    found = bounded(picked.group(1)) if picked is not None else None
    return {found: CHERRY_PICK} if found is not None else {}


def title_carries(title: str) -> dict[int, str]:
    """The PR the sync bot's ``[sync] PR-<N>:`` title prefix carries."""
    sync = _SYNC_TITLE.match(title)
    found = bounded(sync.group(1)) if sync is not None else None
    return {found: SYNC} if found is not None else {}


def _ours_said(pairs: Iterable[tuple[str, str]], upstream: str) -> dict[int, str]:
    values = (bounded(digits) for repo, digits in pairs if _same_repo(repo, upstream))
    return {value: BACKPORT for value in values if value is not None}


def carries(pr: PullRequest, number: int, upstream: str, target: str) -> str | None:
    """How an open or merged ``pr`` into ``target`` carries PR ``number``, or None."""
    if pr.base != target or pr.state not in ("open", "merged"):
        return None
    forms = {**_ours_said(_SOURCE_LINE.findall(pr.body), upstream), **head_carries(pr.head, target),
             **title_carries(pr.title)}
    return forms.get(number)


def commit_carries(message: str, upstream: str, branch: str) -> set[int]:
    """The PRs a commit on ``branch`` carries, other than its own squash line's."""
    from backport.git.squash_message import own_message, squash_head, squash_number  # the audit's

    own = squash_number(message)
    head = squash_head(message, own) if own is not None else ""
    last = own_message(message).rsplit("\n\n", 1)[-1].strip()
    trailer = _TOOL_TRAILER.fullmatch(last)
    said = [(trailer.group(1), trailer.group(2))] if trailer else []
    found = {**_ours_said(said, upstream),
             **head_carries(head, branch), **title_carries(message.split("\n", 1)[0])}
    return set(found) - {own}


def _ours(pr: PullRequest, job: BranchJob, bm: BranchMap) -> bool:
    return pr.head == job.fork_branch and _same_repo(pr.head_repo, bm.fork)


# Why a PR that names the source may stop the branch (`counts`), as the progress says it.
BOT_BRANCH = "its branch is the upstream's own"
WRITER = "its author may write to the upstream"
SAME_CHANGE = "its commits carry the change"


def bot_branch(pr: PullRequest, kind: str, upstream: str) -> bool:
    """A bot's form on a branch of the upstream itself, which only its writers can make."""
    return kind in (SYNC, CHERRY_PICK) and _same_repo(pr.head_repo, upstream)


def counts(pr: PullRequest, kind: str, *, upstream: str, can_write: Callable[[str], bool],
           has_change: Callable[[], bool]) -> str | None:
    """Why ``pr`` may stop the branch, or None; the checks run cheapest first."""
    if bot_branch(pr, kind, upstream):
        return BOT_BRANCH
    if can_write(pr.author):
        return WRITER
    if has_change():
        return SAME_CHANGE
    return None


def _first_counting(run: SetRun, job: BranchJob, found: list[tuple[PullRequest, str]],
                    number: int) -> tuple[PullRequest, str, str] | None:
    """The first PR of ``found`` (merged first, then oldest) that counts, with kind and why."""
    forge, session = run.session.forge.client(), run.session
    patches = [patch.data for patch in job.patch_set.patches]
    for pr, kind in sorted(found, key=lambda f: (f[0].state != "merged", f[0].number)):
        why = counts(pr, kind, upstream=run.branch_map.upstream,
                     can_write=lambda login: session.permissions.can_write(forge, login),
                     has_change=partial(carries_change, session.cache, pr.number, job.target,
                                        patches))
        if why is not None:
            return pr, kind, why
        job.event("proposed", f"PR !{pr.number} names !{number} but does not count: its author "
                              f"may not write to the upstream and its commits do not carry the "
                              f"change")
    return None


def proposed_step(run: SetRun, job: BranchJob) -> bool:
    """Stop the branch (False) when another PR into its target carries the source and counts."""
    source = job.patch_set.source
    if source is None or not run.options.mode.opens_prs:
        return True
    forge, bm = run.session.forge.client(), run.branch_map
    job.event("proposed", f"looking for PRs into {job.target} that carry !{source.number}")
    later = forge.later_prs(source.number, job.target)
    if any(_ours(pr, job, bm) and pr.state == "open" for pr in later):
        return True
    found = [(pr, kind) for pr in later if not _ours(pr, job, bm)
             and (kind := carries(pr, source.number, bm.upstream, job.target)) is not None]
    first = _first_counting(run, job, found, source.number)
    if first is None:
        return True
    pr, kind, why = first
    proposed = ProposedPr(number=pr.number, url=pr.url, state=pr.state, kind=kind,
                          title=pr.title)
    message = (f"already proposed in PR !{pr.number} ({pr.state}, {KIND_EN[kind]}; {why}): "
               f"{pr.url}; it carries !{source.number} into {job.target}, so no PR is opened")
    job.stop(lambda r: r.already_proposed(proposed, message))
    return False


def _change(run: SetRun, rec: BranchRecord) -> set[str]:
    """The patch-id of ``rec``'s whole change on its base (empty when there is none)."""
    if not rec.base or not rec.commit or rec.base == rec.commit:
        return set()
    cache = run.session.cache
    out = git(["diff", "--no-color", "--no-ext-diff", rec.base, rec.commit, "--"],
              cwd=cache.path, env=cache.env, check=False)
    if not out.ok or not out.raw.strip():
        return set()
    return patch_ids(cache.path, out.raw, cache.env, memo=cache.memo)


def _carrier(earlier: BranchRecord) -> ProposedPr | None:
    """The PR an earlier set's branch stands for: its own, or the one it found carrying it."""
    if earlier.status == Status.ALREADY_PROPOSED and earlier.proposed is not None:
        return earlier.proposed
    if earlier.pr is not None:
        return ProposedPr(number=earlier.pr.number, url=earlier.pr.url, state="open",
                          kind=BACKPORT, title=earlier.pr.title or "")
    return None


def same_fix_step(run: SetRun, job: BranchJob) -> bool:
    """Stop the branch (False) where an earlier set of the batch has a PR of the same change."""
    if not run.earlier or job.patch_set.source is None or not run.options.mode.opens_prs:
        return True
    mine = _change(run, job.record)
    if not mine:
        return True
    found = next(((other, pr) for other in run.earlier if other.patch_set.source is not None
                  and job.target in other.targets
                  and (pr := _carrier(theirs := other.job_for(job.target).record)) is not None
                  and _change(run, theirs) == mine), None)
    if found is None:
        return True
    other, pr = found
    message = (f"already proposed in PR !{pr.number} ({pr.url}) of {other.patch_set.name} in "
               f"this run: it carries the same change into {job.target}, so no PR is opened")
    job.stop(lambda r: r.already_proposed(pr, message))
    return False
