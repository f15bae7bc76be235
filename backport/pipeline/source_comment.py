"""The summary comment on the source PR of a set made from a PR (`apply --from-pr`).

One comment, found again by its hidden marker AND its author (the token's user,
``Forge.current_user``) and edited in place: a comment anyone else wrote is never edited, read
as rows or counted, whatever marker it holds. Every runner renders it
from the set as the forge shows it (each branch's PR evidence, as the PR bodies are), so
runners on other hosts converge on the same text. Posting is looked up before and read back
after: when two runners posted at once, the oldest summary is kept and edited, and the one
this run wrote is deleted; nothing another run wrote is ever deleted. Best effort: a refusal
is returned as a warning, never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from backport.config.model import BranchMap, PatchSet
from backport.errors import BackportError
from backport.forge import Comment, Forge
from backport.pipeline.shared_results import body_records, read_set
from backport.records import BranchRecord
from backport.report.summary import MARKER, render_summary

log = logging.getLogger(__name__)


def one_comment(forge: Forge, number: int, marker: str,
                render: Callable[[str | None], str]) -> None:
    """Make PR ``number`` hold one comment of ours with ``marker``, its text ``render(old
    text)``: the oldest such comment edited where one exists, else one posted and read back
    (when another runner of ours posted at the same moment, the oldest is kept and this run's
    is deleted). Only comments the token's user wrote are considered."""
    me = forge.current_user()
    found = _marked(forge, number, marker, me)
    if found:
        _edit(forge, number, found[0], render(found[0].body))
        return
    posted = forge.post_comment(number, render(None))
    found = _marked(forge, number, marker, me)
    oldest = found[0] if found else posted
    if oldest.id != posted.id:
        _edit(forge, number, oldest, render(oldest.body))
        forge.delete_comment(number, posted.id)


class _Summary:
    """The summary's text over the records chosen, keeping rows of an existing one."""

    def __init__(self, ps: PatchSet, bm: BranchMap, records: list[BranchRecord]) -> None:
        self.ps, self.bm, self.records = ps, bm, records

    def __call__(self, existing: str | None) -> str:
        return render_summary(self.ps, self.bm, self.records, existing)


def write_summary(forge: Forge, ps: PatchSet, bm: BranchMap, records: list[BranchRecord],
                  ran: frozenset[str]) -> str | None:
    """Post or edit the summary comment on ``ps``'s source PR; a warning when the forge
    refused (None when it is current)."""
    if ps.source is None:
        return None
    number = ps.source.number
    try:
        # a whole-set run's own writes keep the forge's listing current (as for the refresh)
        state = read_set(forge, ps, bm, fresh=bool(set(ps.branches) - ran))
        chosen, _ = body_records(records, state, ran=ran)
        one_comment(forge, number, MARKER, _Summary(ps, bm, chosen))
    except BackportError as exc:
        text = (f"summary comment on the source PR !{number} not written "
                f"(the backports are not affected): {exc.message.rstrip('.')}")
        log.warning("%s", text)
        return text
    return None


def _marked(forge: Forge, number: int, marker: str, me: str) -> list[Comment]:
    """Our comments holding ``marker``, oldest first."""
    return [c for c in forge.list_comments(number)
            if marker in c.body and c.author.casefold() == me.casefold()]


def _edit(forge: Forge, number: int, comment: Comment, body: str) -> None:
    if comment.body.strip() != body.strip():
        forge.edit_comment(number, comment.id, body)
