"""``--dry-run``'s forge: reads go through to the real one, every write becomes one plan line.

The PRs it answers for a create or an update are ``planned`` (number 0, a placeholder URL).
Without a forge to read from (GitCode without a token) nothing is found, and the plan says so
once. :meth:`DryRunForge.request_summary` estimates a run's requests and the time they take.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from backport.config.model import TOKEN_LOGIN, fork_of
from backport.errors import BackportError
from backport.forge.base import Comment, Forge, PullRequest, SourcePrInfo
from backport.redact import redact

log = logging.getLogger(__name__)

PLACEHOLDER_URL = "(dry run: no PR opened)"
_NEW = "<new>"  # a planned PR's number in the plan


def _quote(text: str, limit: int = 72) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "'" + text.replace("'", "\\'") + "'"


def _flag(name: str, value: bool | None) -> str:
    return "" if value is None else f" {name}={str(value).lower()}"


def _passed_on(method: str, empty: Callable[[], Any], *, of_pr: bool = False) -> Any:
    """A read the inner forge answers (``empty()`` without one, or for a planned PR if
    ``of_pr``: the first argument is a PR number)."""
    def read(self: DryRunForge, *args: Any, **kw: Any) -> Any:
        return self._read(args[0] if of_pr else None, method, empty, *args, **kw)
    return read


class DryRunForge(Forge):
    """Describe writes to ``plan``; ``inner`` answers reads (None: none, for want of a token)."""

    def __init__(self, inner: Forge | None, plan: Callable[[str], None] | None, *,
                 upstream: str, fork: str, name: str = "",
                 windows: tuple[tuple[int, float], ...] | None = None) -> None:
        self.inner = inner
        self.plan = plan or (lambda line: log.info("dry run: %s", line))
        self.upstream = upstream
        self._fork = fork  # "" follows the token: `fork`
        self.name = name or (inner.name if inner is not None else "dry-run")
        self._told_skipped = False
        self._planned: dict[tuple[str, str], PullRequest] = {}
        self.windows = windows
        self.writes = 0  # requests the planned writes would cost, read-backs included
        self.creates = 0

    @property
    def fork(self) -> str:
        """As set, else the token's login's; shown as the token's without one."""
        return self._fork or fork_of(self.upstream, self.current_user() or TOKEN_LOGIN)

    def current_user(self) -> str:
        """The inner forge's answer; "" where it has nothing to ask with (no token)."""
        return "" if self.inner is None or self.inner.missing() else self.inner.current_user()

    def _emit(self, line: str, cost: int = 1) -> None:
        self.writes += cost
        self.plan(redact(line))

    def _read(self, number: int | None, method: str, empty: Callable[[], Any], *args: Any,
              **kw: Any) -> Any:
        """The inner forge's ``method(*args)``, or ``empty()`` without one or for a planned PR."""
        if number == 0:
            return empty()
        if self.inner is None:
            if not self._told_skipped:
                self._told_skipped = True
                self._emit("GET requests skipped (no GitCode token); existing PRs are not looked "
                           "up", cost=0)
            return empty()
        return getattr(self.inner, method)(*args, **kw)

    def request_summary(self, sets: int) -> str | None:
        """One plan line: about how many GitCode requests the run makes, and how long the rate
        limit makes that take (None for another forge)."""
        if self.name != "gitcode":
            return None
        from backport.forge.pace import DEFAULT_WINDOWS, pacing_seconds, period_text
        client = getattr(self.inner, "client", None)
        windows = self.windows or DEFAULT_WINDOWS
        reads = int(getattr(client, "sent", 0)) if client is not None else 3 + 3 * sets
        # once a set's PRs exist: its PRs listed afresh, the bodies of all but its last rewritten
        refresh = max(0, self.creates - sets) + (2 * sets if self.creates else 0)
        total = reads + self.writes + refresh
        wait = pacing_seconds(total, windows)
        limits = " and ".join(f"{limit} per {period_text(period)}" for limit, period in windows)
        took = ("that needs no wait" if wait <= 0 else
                f"that takes at least {wait / 60:.0f} min" if wait >= 60 else
                f"that takes at least {wait:.0f} s")
        return (f"about {total} GitCode API requests for {self.creates} new PR(s) in {sets} patch "
                f"set(s) ({reads} reads{' made now' if client is not None else ' estimated'}, "
                f"{self.writes + refresh} for the writes and their read-backs); under the limit "
                f"of {limits}, {took}")

    def _pulls(self, suffix: object = "") -> str:
        return f"/repos/{self.upstream}/pulls{suffix}"

    def missing(self) -> list[str]:
        return []  # a dry run writes nothing, so it needs no token

    def preflight(self) -> None:
        if self.inner is not None:
            self.inner.preflight()

    def push_credentials(self, url: str) -> dict[str, str] | None:
        return self.inner.push_credentials(url) if self.inner is not None else None

    find_open_pr = _passed_on("find_open_pr", lambda: None)
    list_prs = _passed_on("list_prs", list)
    later_prs = _passed_on("later_prs", list)
    issue_state = _passed_on("issue_state", str)
    linked_issues = _passed_on("linked_issues", list, of_pr=True)
    list_comments = _passed_on("list_comments", list, of_pr=True)
    permission = _passed_on("permission", lambda: "none")
    collaborators = _passed_on("collaborators", dict)
    pr_files = _passed_on("pr_files", list)

    def get_pr(self, number: int) -> PullRequest:
        found = self._read(number, "get_pr", lambda: None, number)
        if found is not None:
            return found
        return next((pr for pr in self._planned.values() if pr.number == number),
                    PullRequest(number=number, url=PLACEHOLDER_URL, title="", body="", head="",
                                head_repo=self.fork, base="", state="open"))

    def get_source_pr(self, number: int) -> SourcePrInfo:
        if self.inner is None:
            raise BackportError("usage", f"a dry run without a {self.name} token cannot read "
                                         f"PR !{number}; set the token to plan a backport from it")
        return self.inner.get_source_pr(number)

    def create_pr(self, head: str, base: str, title: str, body: str, *, draft: bool = False,
                  head_sha: str | None = None, close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        existing = self.find_open_pr(head, base)
        if existing is not None:
            return existing
        self._emit(f"POST {self._pulls()} head={self.fork}:{head} base={base} "
                   f"title={_quote(title)} body=<{len(body)} chars>{' draft=true' if draft else ''}"
                   f"{_flag('close_related_issue', close_related_issue)}",
                   cost=3)  # the open PRs into base read afresh, the POST, the read-back
        self.creates += 1
        pr = PullRequest(number=0, url=PLACEHOLDER_URL, title=title, body=body, head=head,
                         head_repo=self.fork, base=base, state="open", draft=draft, planned=True)
        self._planned[(head, base)] = pr
        return pr

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        current = self.get_pr(number)
        updated = dataclasses.replace(current, title=title, body=body, planned=True,
                                      draft=current.draft if draft is None else draft)
        if number == 0:
            self._planned[(updated.head, updated.base)] = updated
        else:
            self._emit(f"PATCH {self._pulls(f'/{number}')} title={_quote(title)} body=<{len(body)} "
                       f"chars>{_flag('draft', draft)}"
                       f"{_flag('close_related_issue', close_related_issue)}")
        return updated

    def link_issues(self, number: int, issues: Sequence[int]) -> None:
        linked = set(self.linked_issues(number))
        wanted = [int(i) for i in dict.fromkeys(issues) if i not in linked]
        if wanted:
            self._emit(f"POST {self._pulls(f'/{number or _NEW}/issues')} {wanted}")

    def add_comment(self, number: int, body: str) -> None:
        self._emit(f"POST {self._pulls(f'/{number or _NEW}/comments')} body={_quote(body)}")

    def decorate(self, number: int, *, labels: tuple[str, ...] = (),
                 assignees: tuple[str, ...] = (), reviewers: tuple[str, ...] = (),
                 testers: tuple[str, ...] = ()) -> None:
        n = number or _NEW
        if labels:
            self._emit(f"POST {self._pulls(f'/{n}/labels')} {list(labels)}")
        for role, names, more in (("assignees", assignees, ""),
                                  ("reviewers", reviewers, " add=true"),
                                  ("testers", testers, " add=true")):
            if names:
                self._emit(f"POST {self._pulls(f'/{n}/{role}')} {role}={','.join(names)}{more}")

    def post_comment(self, number: int, body: str) -> Comment:
        self._emit(f"POST {self._pulls(f'/{number}/comments')} body=<{len(body)} chars>", cost=2)
        return Comment(id="0", body=body)

    def edit_comment(self, number: int, comment_id: str, body: str) -> Comment:
        self._emit(f"PATCH {self._pulls(f'/comments/{comment_id}')} body=<{len(body)} chars>",
                   cost=2)
        return Comment(id=comment_id, body=body)

    def delete_comment(self, number: int, comment_id: str) -> None:
        self._emit(f"DELETE {self._pulls(f'/comments/{comment_id}')}")
