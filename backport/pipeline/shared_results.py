"""The patch set as the forge shows it, so runs on different hosts share their results.

Each branch's open PR carries its own record, one hidden JSON line in its evidence region
(``report/regions.py`` `record_line`); the evidence text above it is for reviewers and is never read. A
run reads the set's open PRs in one list, takes the record of every branch from its PR and the
fork branches' heads from one ``ls-remote``, and renders a body from that and its own journal:
a branch's journal record is used where it states the result the PR shows (it also knows how
the series went in), or a result of the fork branch's current head that the PR does not show
yet; otherwise the PR's record. A fork branch whose head is not the commit that record was
written for shows that result as stale.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from backport.config.model import BranchMap, PatchSet
from backport.docs_audit import DocsEntry
from backport.errors import BackportError
from backport.forge import Forge, PullRequest
from backport.git.cache import remote_shas
from backport.records import BranchRecord, PrInfo
from backport.report.body import BodyContext
from backport.report.regions import read_line


@dataclass(frozen=True)
class SetOnForge:
    """The open PRs of one patch set's fork branches, the records they carry and fork heads."""

    prs: dict[str, PullRequest] = field(default_factory=dict)  # target -> its open PR
    shared: dict[str, BranchRecord] = field(default_factory=dict)  # target -> its PR's record
    heads: dict[str, str | None] = field(default_factory=dict)  # target -> fork branch head
    lines: dict[str, dict] = field(default_factory=dict)  # target -> the JSON of that record

    def with_pr(self, target: str, pr: PullRequest) -> SetOnForge:
        """This state with ``target``'s PR as just read (its record taken from it)."""
        shared, lines = dict(self.shared), dict(self.lines)
        read = read_line(pr.body, target=target, fork_branch=pr.head)
        if read is not None:
            shared[target], lines[target] = read
        else:
            shared.pop(target, None)
            lines.pop(target, None)
        return dataclasses.replace(self, prs={**self.prs, target: pr}, shared=shared,
                                   lines=lines)


def read_set(forge: Forge, ps: PatchSet, bm: BranchMap, *, fresh: bool = True) -> SetOnForge:
    """One list of open PRs, the record each branch's PR carries, one ``ls-remote`` of the fork.

    A list item whose body holds no record (a service may cut list bodies short) is read once
    by itself. The fork heads are best-effort: unreadable, the evidence's own head
    stands. ``fresh`` (the default) lists the service now; False may use the forge's kept
    listing, which its own writes keep current.
    """
    by_branch = {ps.fork_branch(bm, target): target for target in ps.branches}
    fork = bm.fork.casefold()
    prs: dict[str, PullRequest] = {}
    for pr in forge.list_prs("open", fresh=fresh):
        target = by_branch.get(pr.head)
        if (target is None or pr.base != target or pr.state != "open"
                or pr.head_repo.casefold() != fork):
            continue
        if target not in prs or pr.number < prs[target].number:
            prs[target] = pr
    shared: dict[str, BranchRecord] = {}
    lines: dict[str, dict] = {}
    for target, pr in list(prs.items()):
        read = read_line(pr.body, target=target, fork_branch=pr.head)
        if read is None:
            pr = prs[target] = forge.get_pr(pr.number)
            read = read_line(pr.body, target=target, fork_branch=pr.head)
        if read is not None:
            shared[target], lines[target] = read
    heads: dict[str, str | None] = {}
    if prs:
        branches = {ps.fork_branch(bm, target): target for target in prs}
        try:
            found = remote_shas(bm.fork_url, list(branches),
                                env=forge.push_credentials(bm.fork_url))
            heads = {branches[branch]: sha for branch, sha in found.items()}
        except BackportError:
            heads = {}
    return SetOnForge(prs=prs, shared=shared, heads=heads, lines=lines)


def _tested(rec: BranchRecord) -> str | None:
    """The commit the journal's result is of (a skipped test: the commit pushed)."""
    if rec.test is None:
        return None
    return rec.test.commit or rec.pushed_sha or rec.commit


def _shown_tested(shown: BranchRecord) -> str | None:
    """The commit the result a PR shows is of: its tested commit, else the head it shows."""
    test = shown.test
    return (test.commit if test and not test.skipped and test.commit else None) or shown.head


def _journal_states_it(rec: BranchRecord, shown: BranchRecord, head: str | None) -> bool:
    """True when the journal's record is the one to render: it states the result the PR
    shows, or a result of the fork branch's head that the PR does not show yet."""
    tested = _tested(rec)
    if tested is None:
        return False
    if tested == _shown_tested(shown) and (rec.fork_sha or rec.pushed_sha) == shown.head:
        return True
    return head is not None and tested == head and _shown_tested(shown) != head


def body_records(records: list[BranchRecord], state: SetOnForge, *, own: str | None = None,
                 ran: frozenset[str] = frozenset()) -> tuple[list[BranchRecord], frozenset[str]]:
    """The records a body renders and the branches whose record was read from their PR.

    ``own`` comes from the journal, and so does each of ``ran`` (the branches this run
    worked on) that has a result of this run; the others as `_journal_states_it` says.
    """
    chosen: list[BranchRecord] = []
    read_back: set[str] = set()
    known = {rec.target for rec in records}
    never_run_here = [BranchRecord(target, pr.head) for target, pr in state.prs.items()
                      if target not in known]
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
    """The context of ``target``'s body, every branch as the forge shows it (``target``'s
    own record from the journal with ``own_from_journal``: the run just made its result)."""
    if state is None:
        return BodyContext(branch_map=bm, patch_set=ps, branches=records, target=target,
                           docs=docs)
    branches, read_back = body_records(records, state, own=target if own_from_journal else None,
                                       ran=ran)
    return BodyContext(branch_map=bm, patch_set=ps, branches=branches, target=target, docs=docs,
                       kept=state.lines.get(target) if target in read_back else None)


def record_for(records: list[BranchRecord], state: SetOnForge, target: str,
               ran: frozenset[str] = frozenset()) -> BranchRecord | None:
    """The record ``target``'s own PR is rendered from when a run refreshes it."""
    chosen, _ = body_records(records, state, ran=ran)
    return next((rec for rec in chosen if rec.target == target), None)


def known(records: list[BranchRecord], state: SetOnForge, target: str) -> bool:
    """True when a body of ``target`` can be rendered from facts: its PR carries a record, or
    the journal has the branch. A PR with no record (written before the record line existed, or
    its line deleted) and no journal record here is left to the host that has its results."""
    return target in state.shared or any(rec.target == target for rec in records)


def draft_implied(rec: BranchRecord | None, ps: PatchSet) -> bool:
    """The draft state a branch's PR should have: its test failed, its result does not
    validate the change (``not_in_build``), or the patch set asks."""
    failed = rec is not None and rec.test is not None and rec.test.ok is False
    unproven = rec is not None and rec.test is not None and rec.test.not_in_build
    return failed or unproven or ps.pr.draft


def forge_records(forge: Forge, ps: PatchSet, bm: BranchMap) -> tuple[SetOnForge, dict[str, BranchRecord]]:
    """The set as GitCode shows it, with no journal: each branch with an open PR, as the
    record that PR carries states it (a fork branch moved since shows its result as stale)."""
    state = read_set(forge, ps, bm)
    chosen, _ = body_records([], state)
    return state, {rec.target: rec for rec in chosen}
