"""Already proposed elsewhere: before a set made from upstream PR N does any work on a target,
look for an open or merged PR into that target that already carries PR N there.

`carries` is the one rule of how a PR carries PR N (a pure function of its head branch, title and
body), and `commit_carries` the same rule for a commit (the audit's): only the forms the sync
bot, GitCode's cherry-pick or this tool write, where they write them; a mention ("cf. !N", "参考
!N", a quoted description) carries nothing, since anyone can write one. `counts`
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
from collections.abc import Callable, Iterable
from functools import partial

from backport.config.model import BranchMap
from backport.forge import Forge, PullRequest
from backport.git.apply import carries_change
from backport.git.cache import RepoCache
from backport.git.squash_message import own_message, squash_head, squash_number
from backport.numerals import DIGITS
from backport.numerals import number as bounded
from backport.pipeline.job import BranchJob
from backport.pipeline.set_run import SetRun
from backport.pipeline.writers import Writers
from backport.records import ProposedPr
from backport.report.evidence_fields import SOURCE

# The forms a PR or commit carries a source PR by, and how the terminal says them (the PR
# body's Chinese: report/prose_zh.py). ``BODY`` (a description naming the PR) is no carrier
# any more: it is kept only to read records written before.
SYNC, CHERRY_PICK, BACKPORT, BODY = "sync", "cherry-pick", "backport", "body"
KIND_EN = {SYNC: "the sync bot's PR", CHERRY_PICK: "GitCode's cherry-pick",
           BACKPORT: "a backport PR", BODY: "a PR whose description names the source PR"}

_SYNC_TITLE = re.compile(rf"^\s*\[sync\]\s*PR-({DIGITS})(?![0-9])", re.IGNORECASE)
_SYNC_HEAD = re.compile(rf"^sync-pr({DIGITS})-(.+)$")
_CHERRY_PICK = re.compile(rf"^cherry-pick-mr-({DIGITS})-[0-9]+-auto$")
_REPO = r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
# This tool's forms, where it writes them: a backport PR's evidence line, and the trailer
# that is the last paragraph of a backport commit's message (git/squash_message.py).
_SOURCE_LINE = re.compile(rf"^{re.escape(SOURCE.prefix)}({_REPO})!({DIGITS})@[0-9a-f]{{40}}$",
                          re.MULTILINE)
_TOOL_TRAILER = re.compile(rf"Backport of ({_REPO})!({DIGITS})\.\n"
                           rf"\(cherry picked from commit [0-9a-f]{{40}}\)")


def _same_repo(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def head_carries(head: str, target: str) -> dict[int, str]:
    """The PR a head branch carries into ``target`` by a bot's form: the sync bot's
    ``sync-pr<N>-<head>-to-<target>`` (or its short ``sync-pr<N>-<target>``), GitCode's
    ``cherry-pick-mr-<N>-<digits>-auto``."""
    sync = _SYNC_HEAD.match(head)
    if sync is not None:
        rest, tail = sync.group(2), f"-to-{target}"
        found = bounded(sync.group(1))
        if found is not None and (rest == target or (rest.endswith(tail)
                                                     and len(rest) > len(tail))):
            return {found: SYNC}
        return {}
    picked = _CHERRY_PICK.match(head)
    found = bounded(picked.group(1)) if picked is not None else None
    return {found: CHERRY_PICK} if found is not None else {}


def title_carries(title: str) -> dict[int, str]:
    """The PR the sync bot's ``[sync] PR-<N>:`` title prefix carries."""
    sync = _SYNC_TITLE.match(title)
    found = bounded(sync.group(1)) if sync is not None else None
    return {found: SYNC} if found is not None else {}


def _ours_said(pairs: Iterable[tuple[str, str]], upstream: str) -> dict[int, str]:
    found = {}
    for repo, digits in pairs:
        value = bounded(digits)
        if value is not None and _same_repo(repo, upstream):
            found[value] = BACKPORT
    return found


def carries(pr: PullRequest, number: int, upstream: str, target: str) -> str | None:
    """How ``pr`` carries PR ``number`` of ``upstream`` into ``target`` (``SYNC``,
    ``CHERRY_PICK``, ``BACKPORT``), or None when it does not. Only an open or merged PR into
    ``target`` counts, and only by a form its writer puts where it writes it: the sync bot's
    title prefix or branch, GitCode's cherry-pick branch, the source line of this tool's
    evidence; a description that mentions ``!N`` carries nothing."""
    if pr.base != target or pr.state not in ("open", "merged"):
        return None
    forms = {**_ours_said(_SOURCE_LINE.findall(pr.body), upstream), **head_carries(pr.head, target),
             **title_carries(pr.title)}
    return forms.get(number)


def commit_carries(message: str, upstream: str, branch: str) -> set[int]:
    """The PRs a commit on ``branch`` carries, other than its own (the PR its GitCode squash
    message is): the sync bot's title prefix on its subject, the head branch of its own squash
    line (a bot's form), this tool's trailer as the last paragraph of the message its author
    wrote. A mention anywhere else (a description quoted in the squash message, "see also
    !N", "参考 !N") carries nothing."""
    own = squash_number(message)
    head = squash_head(message, own) if own is not None else ""
    words = own_message(message)
    last = words.rsplit("\n\n", 1)[-1].strip()
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
