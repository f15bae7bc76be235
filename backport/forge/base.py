"""The forge protocol: what the pipeline needs from GitCode (or the embedded local forge)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class PullRequest:
    """A pull request as the pipeline sees it, whatever the forge's wire shape."""

    number: int
    url: str
    title: str
    body: str
    head: str  # source (fork) branch name
    head_repo: str  # owner/repo the head branch lives in
    base: str  # target branch
    state: str  # "open" | "closed" | "merged"
    draft: bool = False


# Receives one line per API call a dry run would make: "POST /repos/o/r/pulls title=… head=…".
PlanSink = Callable[[str], None]


class Forge(Protocol):
    """Find-or-create PRs from fork branches into upstream target branches."""

    name: str

    def preflight(self) -> None:
        """Check credentials and that upstream and fork are visible; raise BackportError."""

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        """The open PR from fork branch ``head`` into ``base``, or None (never trusts filters)."""

    def get_pr(self, number: int) -> PullRequest:
        """One PR by number."""

    def list_prs(self, state: str = "open") -> list[PullRequest]:
        """PRs of the upstream repository in ``state`` ("open" or "all")."""

    def create_pr(self, head: str, base: str, title: str, body: str, *, draft: bool = False) -> PullRequest:
        """Open a PR from fork branch ``head``; verified to come from the fork; never duplicates."""

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None) -> PullRequest:
        """Replace title and body (both sent together)."""

    def link_issue(self, number: int, issue: int) -> None:
        """Link upstream ``issue`` to PR ``number`` (idempotent)."""

    def linked_issues(self, number: int) -> list[int]:
        """Issue numbers linked to PR ``number``."""

    def add_comment(self, number: int, body: str) -> None:
        """Post a PR comment."""

    def decorate(self, number: int, *, labels: tuple[str, ...] = (), assignees: tuple[str, ...] = (),
                 reviewers: tuple[str, ...] = (), testers: tuple[str, ...] = ()) -> None:
        """Add labels / assignees / reviewers / testers without removing existing ones."""
