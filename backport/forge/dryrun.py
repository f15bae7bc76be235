"""A forge wrapper for ``--dry-run``: reads go through, every write becomes one plan line."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence

from backport.config.model import TOKEN_LOGIN, fork_of
from backport.errors import BackportError
from backport.forge.base import Comment, Forge, PlanSink, PrFile, PullRequest, SourcePrInfo
from backport.forge.pace import DEFAULT_WINDOWS, pacing_seconds, period_text
from backport.redact import redact

log = logging.getLogger(__name__)

PLACEHOLDER_URL = "(dry run: no PR opened)"


def _quote(text: str, limit: int = 72) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "'" + text.replace("'", "\\'") + "'"


def _log_plan(line: str) -> None:
    log.info("dry run: %s", line)


class DryRunForge:
    """Describe writes instead of sending them.

    ``inner`` answers reads; when it is None (e.g. GitCode without a token) reads are skipped
    too: nothing is found, and the plan says so once.
    """

    def __init__(self, inner: Forge | None, plan: PlanSink | None, *, upstream: str, fork: str,
                 name: str = "", skip_reason: str = "",
                 windows: tuple[tuple[int, float], ...] | None = None) -> None:
        self.inner = inner
        self.plan = plan or _log_plan
        self.upstream = upstream
        self._fork = fork  # "" follows the token: `fork`
        self.name = name or (inner.name if inner is not None else "dry-run")
        self.skip_reason = skip_reason
        self._said_skipped = False
        self._planned: dict[tuple[str, str], PullRequest] = {}
        client = getattr(inner, "client", None)
        limiter = getattr(client, "limiter", None)
        self.windows = windows or getattr(limiter, "windows", None) or DEFAULT_WINDOWS
        self.writes = 0  # requests the planned writes would cost, read-backs included
        self.creates = 0

    @property
    def fork(self) -> str:
        """The fork: as set, else the token's login's (asked of the inner forge), else shown
        as the token's (a dry run without a token cannot ask)."""
        if self._fork:
            return self._fork
        login = self.current_user()
        return fork_of(self.upstream, login or TOKEN_LOGIN)

    def current_user(self) -> str:
        """A read: the inner forge's answer; "" where it has nothing to ask with (no token)."""
        if self.inner is None or self.inner.missing():
            return ""
        return self.inner.current_user()

    def _emit(self, line: str, cost: int = 1) -> None:
        self.writes += cost
        self.plan(redact(line))

    def request_summary(self, sets: int) -> str | None:
        """One plan line: about how many API requests the run would make and how long the
        service's rate limit makes that take (None for a forge without such a limit)."""
        if self.name != "gitcode":
            return None
        client = getattr(self.inner, "client", None)
        # made now (each set's issue read too: is it still open?), or estimated without a token
        reads = int(getattr(client, "sent", 0)) if client is not None else 3 + 3 * sets
        # the bodies of all but the last new PR of each set rewritten once all exist: read,
        # then PATCH
        refresh = 2 * max(0, self.creates - sets)
        total = reads + self.writes + refresh
        wait = pacing_seconds(total, self.windows)
        limits = " and ".join(f"{limit} per {period_text(period)}" for limit, period in self.windows)
        took = ("that needs no wait" if wait <= 0 else
                f"that takes at least {wait / 60:.0f} min" if wait >= 60 else
                f"that takes at least {wait:.0f} s")
        return (f"about {total} GitCode API requests for {self.creates} new PR(s) in {sets} patch "
                f"set(s) ({reads} reads{' made now' if client is not None else ' estimated'}, "
                f"{self.writes + refresh} for the writes and their read-backs); under the limit "
                f"of {limits}, {took}")

    def _reads(self) -> Forge | None:
        """The forge that answers reads, or None (said once in the plan)."""
        if self.inner is not None:
            return self.inner
        if not self._said_skipped:
            self._said_skipped = True
            self._emit(f"GET requests skipped ({self.skip_reason or 'no forge to read from'}); "
                       "existing PRs are not looked up", cost=0)
        return None

    def _pulls(self, suffix: str = "") -> str:
        return f"/repos/{self.upstream}/pulls{suffix}"

    def missing(self) -> list[str]:
        return []  # a dry run writes nothing, so it needs no token

    def preflight(self) -> None:
        if self.inner is not None:
            self.inner.preflight()

    def push_credentials(self, url: str) -> dict[str, str] | None:
        """The inner forge's (ls-remote still reads the fork in a dry run)."""
        return self.inner.push_credentials(url) if self.inner is not None else None

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        reader = self._reads()
        return reader.find_open_pr(head, base) if reader is not None else None

    def get_pr(self, number: int) -> PullRequest:
        reader = self._reads() if number != 0 else None
        if reader is None:
            for pr in self._planned.values():
                if pr.number == number:
                    return pr
            return PullRequest(number=number, url=PLACEHOLDER_URL, title="", body="", head="",
                               head_repo=self.fork, base="", state="open")
        return reader.get_pr(number)

    def get_source_pr(self, number: int) -> SourcePrInfo:
        """A read: passed to the real forge (a dry run without one cannot name the source)."""
        reader = self.inner
        if reader is None:
            raise BackportError("usage", f"a dry run without a {self.name} token cannot read "
                                         f"PR !{number}; set the token to plan a backport from it")
        return reader.get_source_pr(number)

    def list_prs(self, state: str = "open", *, fresh: bool = False) -> list[PullRequest]:
        reader = self._reads()
        return reader.list_prs(state, fresh=fresh) if reader is not None else []

    def later_prs(self, number: int, base: str) -> list[PullRequest]:
        reader = self._reads()
        return reader.later_prs(number, base) if reader is not None else []

    def create_pr(self, head: str, base: str, title: str, body: str, *,
                  draft: bool = False, head_sha: str | None = None,
                  close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        existing = self.find_open_pr(head, base)
        if existing is not None:
            return existing
        closing = "" if close_related_issue is None else \
            f" close_related_issue={str(close_related_issue).lower()}"
        self._emit(f"POST {self._pulls()} head={self.fork}:{head} base={base} title={_quote(title)} "
                   f"body=<{len(body)} chars>{' draft=true' if draft else ''}{closing}",
                   cost=3)  # the open PRs into base read afresh, the POST, the read-back
        self.creates += 1
        pr = PullRequest(number=0, url=PLACEHOLDER_URL, title=title, body=body, head=head,
                         head_repo=self.fork, base=base, state="open", draft=draft, planned=True)
        self._planned[(head, base)] = pr
        return pr

    def verify_pr(self, number: int, head: str, base: str, *,
                  head_sha: str | None = None) -> PullRequest:
        """Reads only: the PR as the forge shows it."""
        return self.get_pr(number)

    def issue_state(self, issue: int) -> str:
        reader = self._reads()
        return reader.issue_state(issue) if reader is not None else ""

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        current = self.get_pr(number)
        if number != 0:
            self._emit(f"PATCH {self._pulls(f'/{number}')} title={_quote(title)} "
                       f"body=<{len(body)} chars>"
                       f"{'' if draft is None else f' draft={str(draft).lower()}'}"
                       f"{'' if close_related_issue is None else f' close_related_issue={str(close_related_issue).lower()}'}")
        changes: dict = {"title": title, "body": body, "planned": True}
        if draft is not None:
            changes["draft"] = draft
        updated = dataclasses.replace(current, **changes)
        if number == 0:
            self._planned[(updated.head, updated.base)] = updated
        return updated

    def link_issues(self, number: int, issues: Sequence[int]) -> None:
        reader = self._reads() if number != 0 else None
        linked = set(reader.linked_issues(number)) if reader is not None else set()
        wanted = [int(i) for i in dict.fromkeys(issues) if i not in linked]
        if not wanted:
            return
        n = number or "<new>"
        self._emit(f"POST {self._pulls(f'/{n}/issues')} {wanted}")

    def linked_issues(self, number: int) -> list[int]:
        reader = self._reads() if number != 0 else None
        return reader.linked_issues(number) if reader is not None else []

    def add_comment(self, number: int, body: str) -> None:
        n = number or "<new>"
        self._emit(f"POST {self._pulls(f'/{n}/comments')} body={_quote(body)}")

    def decorate(self, number: int, *, labels: tuple[str, ...] = (),
                 assignees: tuple[str, ...] = (), reviewers: tuple[str, ...] = (),
                 testers: tuple[str, ...] = ()) -> None:
        n = number or "<new>"
        if labels:
            self._emit(f"POST {self._pulls(f'/{n}/labels')} {list(labels)}")
        if assignees:
            self._emit(f"POST {self._pulls(f'/{n}/assignees')} assignees={','.join(assignees)}")
        if reviewers:
            self._emit(f"POST {self._pulls(f'/{n}/reviewers')} reviewers={','.join(reviewers)} add=true")
        if testers:
            self._emit(f"POST {self._pulls(f'/{n}/testers')} testers={','.join(testers)} add=true")

    def list_comments(self, number: int) -> list[Comment]:
        reader = self._reads() if number != 0 else None
        return reader.list_comments(number) if reader is not None else []

    def post_comment(self, number: int, body: str) -> Comment:
        self._emit(f"POST {self._pulls(f'/{number}/comments')} body=<{len(body)} chars>", cost=2)
        return Comment(id="0", body=body)

    def edit_comment(self, number: int, comment_id: str, body: str) -> Comment:
        self._emit(f"PATCH {self._pulls(f'/comments/{comment_id}')} body=<{len(body)} chars>",
                   cost=2)
        return Comment(id=comment_id, body=body)

    def delete_comment(self, number: int, comment_id: str) -> None:
        self._emit(f"DELETE {self._pulls(f'/comments/{comment_id}')}")

    def permission(self, login: str) -> str:
        reader = self._reads()
        return reader.permission(login) if reader is not None else "none"

    def collaborators(self) -> dict[str, bool]:
        reader = self._reads()
        return reader.collaborators() if reader is not None else {}

    def pr_files(self, number: int) -> list[PrFile]:
        """A read: passed to the real forge (none without one)."""
        reader = self._reads()
        return reader.pr_files(number) if reader is not None else []
