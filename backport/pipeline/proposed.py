"""Already proposed elsewhere: before a set made from upstream PR N does any work on a target,
look for an open or merged PR into that target that already carries PR N there.

`carries` is the one rule of how a PR names PR N (a pure function of its head branch, title and
body); naming is not enough, since anyone can open a PR whose body says "cf. !N". `counts`
decides whether a PR that names N may stop the branch: a bot's branch in the upstream itself
(the sync bot's, GitCode's cherry-pick: only writers make branches there), a PR by a user with
write permission on the upstream (asked once per login for the run, only for PRs that name N),
or a PR whose own commits carry the change (`patch-id`). Anyone else's PR never blocks: it is
only said in the branch's progress. `proposed_step` asks the forge for the PRs opened after PR N
into the target and stops the branch as `already-proposed` on the first PR that counts (merged
ones first, then the oldest). The set's own PRs (its fork branch on the fork) never count: they
are found and refreshed by the PR step as always.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from backport.config.model import BranchMap
from backport.forge import Forge, PullRequest
from backport.git.cache import RepoCache
from backport.git.source_pr import carries_change
from backport.pipeline.job import BranchJob
from backport.pipeline.set_run import SetRun
from backport.pipeline.writers import Writers
from backport.records import ProposedPr
from backport.report.evidence_fields import SOURCE

# The forms a PR names its source by, in the order they are tried, and how the terminal says
# them (the PR body's Chinese: report/prose_zh.py).
SYNC, CHERRY_PICK, BACKPORT, BODY = "sync", "cherry-pick", "backport", "body"
KIND_EN = {SYNC: "the sync bot's PR", CHERRY_PICK: "GitCode's cherry-pick",
           BACKPORT: "a backport PR", BODY: "a PR whose description names the source PR"}

_SYNC_TITLE = re.compile(r"^\s*\[sync\]\s*PR-(\d+)(?!\d)", re.IGNORECASE)
_CHERRY_PICK = re.compile(r"^cherry-pick-mr-(\d+)-\d+-auto$")
# `!N` alone, or `owner/repo!N`; never inside a longer name, path or number.
_REFERENCE = re.compile(r"(?<![A-Za-z0-9_/.-])(?:([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+))?!(\d+)(?!\d)")


def _same_repo(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def names_source(text: str, number: int, upstream: str) -> bool:
    """True when ``text`` names PR ``number`` of ``upstream``: ``!N`` not followed by a digit,
    bare or as ``<upstream>!N`` (another repository's ``!N`` is another PR)."""
    for match in _REFERENCE.finditer(text):
        repo, found = match.group(1), int(match.group(2))
        if found == number and (repo is None or _same_repo(repo, upstream)):
            return True
    return False


def carries(pr: PullRequest, number: int, upstream: str, target: str) -> str | None:
    """How ``pr`` says it carries PR ``number`` of ``upstream`` into ``target`` (``SYNC``,
    ``CHERRY_PICK``, ``BACKPORT``, ``BODY``), or None when it does not. Only an open or merged
    PR into ``target`` counts."""
    if pr.base != target or pr.state not in ("open", "merged"):
        return None
    sync_head, sync_tail = f"sync-pr{number}-", f"-to-{target}"
    title = _SYNC_TITLE.match(pr.title)
    if (title is not None and int(title.group(1)) == number) or (
            pr.head.startswith(sync_head) and pr.head.endswith(sync_tail)
            and len(pr.head) > len(sync_head) + len(sync_tail)) or (
            pr.head == f"{sync_head}{target}"):  # the bot's short form: sync-pr36613-master
        return SYNC
    picked = _CHERRY_PICK.match(pr.head)
    if picked is not None and int(picked.group(1)) == number:
        return CHERRY_PICK
    if names_source(pr.body, number, upstream):
        return BACKPORT if f"{SOURCE.prefix}{upstream}!{number}@" in pr.body else BODY
    return None


def _ours(pr: PullRequest, job: BranchJob, bm: BranchMap) -> bool:
    return pr.head == job.fork_branch and _same_repo(pr.head_repo, bm.fork)


# Why a PR that names the source may stop the branch (`counts`), as the progress says it.
BOT_BRANCH = "its branch is the upstream's own"
WRITER = "its author may write to the upstream"
SAME_CHANGE = "its commits carry the change"


def bot_branch(pr: PullRequest, kind: str, upstream: str) -> bool:
    """The pure part of the trust rule: a bot's form (the sync bot's, GitCode's cherry-pick)
    on a branch of the upstream repository itself, which only its writers can make."""
    return kind in (SYNC, CHERRY_PICK) and _same_repo(pr.head_repo, upstream)


def counts(pr: PullRequest, kind: str, *, upstream: str, can_write: Callable[[str], bool],
           has_change: Callable[[], bool]) -> str | None:
    """Why ``pr``, which names the source as ``kind``, may stop the branch (one of
    ``BOT_BRANCH``, ``WRITER``, ``SAME_CHANGE``), or None when it may not. The checks run in
    order of cost and stop at the first that holds: no request, one per login, a git fetch."""
    if bot_branch(pr, kind, upstream):
        return BOT_BRANCH
    if can_write(pr.author):
        return WRITER
    if has_change():
        return SAME_CHANGE
    return None


def _first_counting(job: BranchJob, found: list[tuple[PullRequest, str]], forge: Forge,
                    bm: BranchMap, writers: Writers, cache: RepoCache,
                    number: int) -> tuple[PullRequest, str, str] | None:
    """The first PR of ``found`` (merged ones first, then the oldest) that counts, with its
    kind and why; each one passed over is said in the branch's progress, by number only."""
    patches = [patch.data for patch in job.patch_set.patches]
    for pr, kind in sorted(found, key=lambda f: (f[0].state != "merged", f[0].number)):
        why = counts(pr, kind, upstream=bm.upstream,
                     can_write=lambda login: writers.can_write(forge, login),
                     has_change=partial(carries_change, cache, pr.number, job.target, patches))
        if why is not None:
            return pr, kind, why
        job.event("proposed", f"PR !{pr.number} names !{number} but does not count: its author "
                              f"may not write to the upstream and its commits do not carry the "
                              f"change")
    return None


def proposed_step(run: SetRun, job: BranchJob) -> bool:
    """For a set made from a PR: stop the branch as already proposed when another open or
    merged PR into its target carries that PR and counts (a merged one first, then the
    oldest); False then. A set not made from a PR, a branch whose own PR is open, and a run
    that opens no PRs go on."""
    source = job.patch_set.source
    if source is None or not run.options.course.opens_prs:
        return True
    forge, bm = run.session.forge.client(), run.branch_map
    writers, cache = run.session.writers, run.session.cache
    job.event("proposed", f"looking for PRs into {job.target} that carry !{source.number}")
    later = forge.later_prs(source.number, job.target)
    if any(_ours(pr, job, bm) and pr.state == "open" for pr in later):
        return True
    found = [(pr, kind) for pr in later if not _ours(pr, job, bm)
             and (kind := carries(pr, source.number, bm.upstream, job.target)) is not None]
    first = _first_counting(job, found, forge, bm, writers, cache, source.number)
    if first is None:
        return True
    pr, kind, why = first
    proposed = ProposedPr(number=pr.number, url=pr.url, state=pr.state, kind=kind,
                          title=pr.title)
    message = (f"already proposed in PR !{pr.number} ({pr.state}, {KIND_EN[kind]}; {why}): "
               f"{pr.url}; it carries !{source.number} into {job.target}, so no PR is opened")
    job.stop(lambda r: r.already_proposed(proposed, message))
    return False
