"""The forge protocol: what the pipeline needs of GitCode (or the embedded local forge).

Everything forge-specific stays behind :class:`Forge`: credentials, head forms, retries, pacing,
and whether writes really happen. GitCode (REST v5, docs/gitcode.md), the local forge (SQLite)
and, for ``--dry-run``, the dry-run forge (whose PRs are ``planned``) implement it; only
:func:`backport.forge.make_forge` builds them, and ``pipeline/`` never names one. A write refused
with 403/404 (:func:`is_refusal`) is recorded by the pr step and not tried again; labels,
assignees, reviewers, testers and the comment are best-effort (a refusal is a warning).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from backport.errors import BackportError


@dataclass(frozen=True)
class PullRequest:
    """A pull request as the pipeline sees it, whatever the forge's wire shape."""

    number: int
    url: str
    title: str
    body: str
    head: str  # fork branch
    head_repo: str  # owner/repo of the head branch
    base: str
    state: str  # "open" | "closed" | "merged"
    draft: bool = False
    not_taken: tuple[str, ...] = ()  # fields an update sent that the PR still does not show
    planned: bool = False  # a dry run's answer: the write was only described
    author: str = ""


@dataclass(frozen=True)
class SourcePrInfo:
    """A PR of the upstream read as a backport's source, with its linked issues ("": not shown)."""

    number: int
    state: str
    title: str
    body: str
    base: str
    head: str
    merge_commit_sha: str
    author: str
    issues: tuple[int, ...] = ()
    merged_at: str = ""  # ISO 8601 as the service writes it

    @property
    def merged(self) -> bool:
        return self.state == "merged"


@dataclass(frozen=True)
class PrFile:
    """One file a PR changes: its path before (None: new) and after (None: deleted)."""

    old: str | None
    new: str | None

    @property
    def paths(self) -> frozenset[str]:
        """Every path it touches: both names of a rename."""
        return frozenset(p for p in (self.old, self.new) if p)


@dataclass(frozen=True)
class Comment:
    """One comment of a PR, as the forge shows it."""

    id: str
    body: str
    author: str = ""
    created_at: str = ""


# Permissions on the upstream that may ask for a backport (`trigger`), as the forge names them.
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "maintainer", "master", "owner", "write",
                               "push"})


class Forge(Protocol):
    """Find-or-create PRs from fork branches into upstream target branches. A forge that
    subclasses it takes the plain answers below where its own reads cost nothing."""

    name: str

    def missing(self) -> list[str]:
        """What this forge lacks that needs no network to tell (no token), one phrase each."""

    def current_user(self) -> str:
        """The token's login: the fork follows it where ``fork:`` is not set ("" when a dry run
        cannot ask)."""

    def preflight(self) -> None:
        """Check credentials and that upstream and fork are visible; raise BackportError."""

    def push_credentials(self, url: str) -> dict[str, str] | None:
        """Extra environment for ``git push``/``ls-remote`` to the fork at ``url``, or None."""
        return None

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        """The open PR from fork branch ``head`` into ``base``, or None (never trusts filters)."""

    def get_pr(self, number: int) -> PullRequest:
        """One PR by number."""

    def current_pr(self, number: int) -> PullRequest:
        """PR ``number`` as it is now, to write over (a copy known unchanged may answer)."""
        return self.get_pr(number)

    def get_source_pr(self, number: int) -> SourcePrInfo:
        """PR ``number`` of the upstream as a backport's source, with its linked issues."""

    def pr_files(self, number: int) -> list[PrFile]:
        """Every file PR ``number`` of the upstream changes, as the service lists them."""

    def list_prs(self, state: str = "open", *, fresh: bool = False) -> list[PullRequest]:
        """The upstream's PRs in ``state`` ("open" or "all"); ``fresh``: never from a listing
        kept from earlier."""

    def later_prs(self, number: int, base: str) -> list[PullRequest]:
        """The upstream's open and merged PRs into ``base`` numbered above ``number``."""

    def create_pr(self, head: str, base: str, title: str, body: str, *, draft: bool = False,
                  head_sha: str | None = None, close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        """Open a PR from fork branch ``head``: create → read back → correct, never duplicated.
        ``on_number`` hears the new number before the read-back; a PR not read back raises with
        ``details["unverified"]``, and :meth:`verify_pr` judges it on the next run."""

    def verify_pr(self, number: int, head: str, base: str, *,
                  head_sha: str | None = None) -> PullRequest:
        """Judge a PR ``create_pr`` opened but left unverified, as right after create."""
        return self.get_pr(number)

    def issue_state(self, issue: int) -> str:
        """``"open"`` or ``"closed"`` for upstream ``issue``; ``""`` when the forge cannot say."""
        return ""

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        """Replace title and body, set draft and issue closing when given; the PR as read back,
        ``not_taken`` naming fields the forge did not take."""

    def link_issues(self, number: int, issues: Sequence[int]) -> None:
        """Link every one of upstream ``issues`` to PR ``number`` (idempotent)."""

    def linked_issues(self, number: int) -> list[int]:
        """Issue numbers linked to PR ``number``."""

    def add_comment(self, number: int, body: str) -> None:
        """Post a PR comment (not read back)."""
        self.post_comment(number, body)

    def decorate(self, number: int, *, labels: tuple[str, ...] = (),
                 assignees: tuple[str, ...] = (), reviewers: tuple[str, ...] = (),
                 testers: tuple[str, ...] = ()) -> None:
        """Add labels / assignees / reviewers / testers, keeping existing ones."""

    def list_comments(self, number: int) -> list[Comment]:
        """Every comment of PR ``number`` (all pages), oldest first."""

    def post_comment(self, number: int, body: str) -> Comment:
        """Post a comment on PR ``number``; the comment as read back."""

    def edit_comment(self, number: int, comment_id: str, body: str) -> Comment:
        """Replace the body of comment ``comment_id`` of PR ``number``; read back."""

    def delete_comment(self, number: int, comment_id: str) -> None:
        """Delete comment ``comment_id`` of PR ``number``."""

    def permission(self, login: str) -> str:
        """``login``'s permission on the upstream (``admin``, ``write``…, ``none``)."""

    def collaborators(self) -> dict[str, bool]:
        """The upstream's listed collaborators, each with whether it may write."""


def is_refusal(exc: BackportError) -> bool:
    """Whether a forge error is the service refusing a write (403/404), not a transient one."""
    return exc.details.get("status") in (403, 404)
