"""The forge protocol: what the pipeline needs of GitCode (or the embedded local forge).

Everything forge-specific stays behind :class:`Forge`: credentials (``missing``, ``preflight``,
``push_credentials``), head forms, retries, pacing, and whether writes really happen. Three
forges implement it: :class:`~backport.forge.gitcode.GitCodeForge` (REST v5, as documented in
``docs/gitcode.md``), :class:`~backport.forge.local.LocalForge` (SQLite, offline) and, for
``--dry-run``, :class:`~backport.forge.dryrun.DryRunForge`, the one place a dry run is decided
for forge writes: the PRs it answers for a create or an update are ``planned``. They are built
by :func:`~backport.forge.factory.make_forge` alone; ``pipeline/`` never names a forge.

The pr step treats labels, assignees, reviewers, testers and the comment as best-effort: a
refusal lands in the record's warnings; a comment or issue link refused with 403/404
(:func:`is_refusal`) is recorded and not tried again.
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
    head: str  # source (fork) branch name
    head_repo: str  # owner/repo the head branch lives in
    base: str  # target branch
    state: str  # "open" | "closed" | "merged"
    draft: bool = False
    not_taken: tuple[str, ...] = ()  # fields an update sent that the PR still does not show
    planned: bool = False  # the create or update was only described (a dry forge's answer)
    author: str = ""  # login of who opened it ("" when not shown)


@dataclass(frozen=True)
class SourcePrInfo:
    """A PR of the upstream read as a backport's source (``GET /pulls/{n}`` and its issues)."""

    number: int
    state: str  # "open" | "closed" | "merged"
    title: str
    body: str
    base: str  # the branch it targets (or landed on)
    head: str  # its source branch name
    head_sha: str  # the head commit the service shows ("" when it shows none)
    merge_commit_sha: str  # "" when the service does not give one (GitCode's single-PR answer)
    author: str  # login of the PR's author ("" when not shown)
    issues: tuple[int, ...] = ()  # linked issues
    merged_at: str = ""  # when it was merged, ISO 8601 as the service writes it ("" if not)

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

    id: str  # what edits and deletes name it by
    body: str
    author: str = ""  # login of who wrote it ("" when not shown)
    created_at: str = ""


# Permissions on the upstream that may ask for a backport (`trigger`), as the forge names them.
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "maintainer", "master", "owner", "write",
                               "push"})

# Receives one line per API call a dry run would make: "POST /repos/o/r/pulls title=… head=…".
PlanSink = Callable[[str], None]


class Forge(Protocol):
    """Find-or-create PRs from fork branches into upstream target branches. A forge that
    subclasses it takes the plain answers below where its own reads cost nothing."""

    name: str

    def missing(self) -> list[str]:
        """What this forge lacks that needs no network to tell (no token), one phrase each;
        ``apply`` reports it before any work."""

    def current_user(self) -> str:
        """The token's login (GitCode: ``GET /user`` once); the fork follows it where
        ``fork:`` is not set, and it is the author of this tool's comments. "" when a dry run
        cannot ask."""

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
        """The upstream's PRs in ``state`` ("open" or "all"); ``fresh``: read now, never from
        a listing kept from earlier (another host may have written since)."""

    def later_prs(self, number: int, base: str) -> list[PullRequest]:
        """The upstream's open and merged PRs into ``base`` numbered above ``number``."""

    def create_pr(self, head: str, base: str, title: str, body: str, *, draft: bool = False,
                  head_sha: str | None = None,
                  close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        """Open a PR from fork branch ``head`` (at ``head_sha``), one transaction: create →
        read back → correct; verified to come from the fork, never duplicated.
        ``close_related_issue`` None: the repository's setting. ``on_number`` hears the new
        number before the read-back (the pr step journals it); a PR not read back raises with
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
        """Replace title and body; set draft and issue closing when given. The PR as read
        back, ``not_taken`` naming fields the forge did not take."""

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
        """Add labels / assignees / reviewers / testers, keeping existing ones; BackportError
        when the forge refuses."""

    def list_comments(self, number: int) -> list[Comment]:
        """Every comment of PR ``number`` (all pages), oldest first."""

    def post_comment(self, number: int, body: str) -> Comment:
        """Post a comment on PR ``number``; the comment as read back."""

    def edit_comment(self, number: int, comment_id: str, body: str) -> Comment:
        """Replace the body of comment ``comment_id`` of PR ``number``; read back."""

    def delete_comment(self, number: int, comment_id: str) -> None:
        """Delete comment ``comment_id`` of PR ``number``."""

    def permission(self, login: str) -> str:
        """``login``'s permission on the upstream (``admin``, ``write``…; ``none`` for a
        stranger)."""

    def collaborators(self) -> dict[str, bool]:
        """The upstream's collaborators its listing shows, each with whether it may write (one
        shown only through an organisation is not in it: :meth:`permission` answers)."""


def is_refusal(exc: BackportError) -> bool:
    """Whether a forge error is the service refusing a write (403/404), not a transient failure
    worth trying again on the next run."""
    return exc.details.get("status") in (403, 404)
