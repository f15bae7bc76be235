"""Already proposed elsewhere: before a set made from upstream PR N does any work on a target,
look for an open or merged PR into that target that already carries PR N there.

`carries` is the one rule of what "carries PR N" means (a pure function of a PR's head branch,
title and body); `proposed_step` asks the forge for the PRs opened after PR N into the target
and stops the branch as `already-proposed` when one of them carries it. The set's own PRs (its
fork branch on the fork) never count: they are found and refreshed by the PR step as always.
"""

from __future__ import annotations

import re

from backport.config.model import BranchMap
from backport.forge import Forge, PullRequest
from backport.pipeline.steps import BranchJob
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
            and len(pr.head) > len(sync_head) + len(sync_tail)):
        return SYNC
    picked = _CHERRY_PICK.match(pr.head)
    if picked is not None and int(picked.group(1)) == number:
        return CHERRY_PICK
    if names_source(pr.body, number, upstream):
        return BACKPORT if f"{SOURCE.prefix}{upstream}!{number}@" in pr.body else BODY
    return None


def _ours(pr: PullRequest, job: BranchJob, bm: BranchMap) -> bool:
    return pr.head == job.fork_branch and _same_repo(pr.head_repo, bm.fork)


def proposed_step(job: BranchJob, forge: Forge, bm: BranchMap) -> bool:
    """For a set made from a PR: stop the branch as already proposed when another open or
    merged PR into its target carries that PR (a merged one first, then the oldest); False
    then. A set not made from a PR, and a branch whose own PR is open, go on."""
    source = job.patch_set.source
    if source is None:
        return True
    job.event("proposed", f"looking for PRs into {job.target} that carry !{source.number}")
    later = forge.later_prs(source.number, job.target)
    if any(_ours(pr, job, bm) and pr.state == "open" for pr in later):
        return True
    found = [(pr, kind) for pr in later if not _ours(pr, job, bm)
             and (kind := carries(pr, source.number, bm.upstream, job.target)) is not None]
    if not found:
        return True
    pr, kind = min(found, key=lambda f: (f[0].state != "merged", f[0].number))
    proposed = ProposedPr(number=pr.number, url=pr.url, state=pr.state, kind=kind,
                          title=pr.title)
    message = (f"already proposed in PR !{pr.number} ({pr.state}, {KIND_EN[kind]}): {pr.url}; "
               f"it carries !{source.number} into {job.target}, so no PR is opened")
    job.stop(lambda r: r.already_proposed(proposed, message))
    return False
