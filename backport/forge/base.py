"""The forge protocol: what the pipeline needs from GitCode (or the embedded local forge)."""

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
    """A PR of the upstream read as the source of a backport (``GET /pulls/{n}`` and its
    ``/issues``): what is needed to find the change it carries."""

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
    """One file a PR changes (``GET /pulls/{n}/files``): its path before the PR (None for a
    new file) and after it (None for a deleted one); a rename has both."""

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
    """Find-or-create PRs from fork branches into upstream target branches.

    Everything forge-specific stays behind this protocol: credentials (``preflight``,
    ``push_credentials``), head forms, retries, and whether writes really happen (the dry
    forge of `forge/dryrun.py` describes them: the PRs it answers are ``planned``).
    """

    name: str

    def missing(self) -> list[str]:
        """What this forge lacks that needs no network to tell (e.g. no token), one phrase each."""

    def current_user(self) -> str:
        """The login of the token's user (GitCode: ``GET /user``, asked once per forge); the
        fork follows it where ``fork:`` is not set, and it is the author of every comment this
        tool writes. "" when a dry run cannot ask (no token)."""

    def preflight(self) -> None:
        """Check credentials and that upstream and fork are visible; raise BackportError."""

    def push_credentials(self, url: str) -> dict[str, str] | None:
        """Extra environment for ``git push``/``ls-remote`` to the fork at ``url``, or None."""

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        """The open PR from fork branch ``head`` into ``base``, or None (never trusts filters)."""

    def get_pr(self, number: int) -> PullRequest:
        """One PR by number."""

    def get_source_pr(self, number: int) -> SourcePrInfo:
        """PR ``number`` of the upstream as a backport's source, with its linked issues."""

    def pr_files(self, number: int) -> list[PrFile]:
        """Every file PR ``number`` of the upstream changes, as the service lists them."""

    def list_prs(self, state: str = "open", *, fresh: bool = False) -> list[PullRequest]:
        """PRs of the upstream repository in ``state`` ("open" or "all"); ``fresh``: read from
        the service now, never from a listing kept from earlier (another host may have written
        since)."""

    def later_prs(self, number: int, base: str) -> list[PullRequest]:
        """The upstream's open and merged PRs into ``base`` numbered above ``number`` (opened
        after PR ``number``, so the ones that may carry it), every one the service lists."""

    def create_pr(self, head: str, base: str, title: str, body: str, *, draft: bool = False,
                  head_sha: str | None = None,
                  close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        """Open a PR from fork branch ``head`` (at ``head_sha`` when given); verified to come
        from the fork; never duplicates. ``close_related_issue``: whether merging it may close
        the linked issues (None: the repository's setting). ``on_number`` hears the new PR's
        number as soon as the forge answers it, before the PR is read back and judged; a PR
        that could not be read back raises with ``details["unverified"]`` and its number."""

    def verify_pr(self, number: int, head: str, base: str, *,
                  head_sha: str | None = None) -> PullRequest:
        """Judge a PR ``create_pr`` opened but left unverified, as right after create."""

    def issue_state(self, issue: int) -> str:
        """``"open"`` or ``"closed"`` for upstream ``issue``; ``""`` when the forge cannot say."""

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        """Replace title and body (both sent together); set draft and issue closing when given."""

    def link_issues(self, number: int, issues: Sequence[int]) -> None:
        """Link every one of upstream ``issues`` to PR ``number`` (idempotent; none: nothing)."""

    def linked_issues(self, number: int) -> list[int]:
        """Issue numbers linked to PR ``number``."""

    def add_comment(self, number: int, body: str) -> None:
        """Post a PR comment."""

    def decorate(self, number: int, *, labels: tuple[str, ...] = (), assignees: tuple[str, ...] = (),
                 reviewers: tuple[str, ...] = (), testers: tuple[str, ...] = ()) -> None:
        """Add labels / assignees / reviewers / testers without removing existing ones.

        Raises BackportError when the forge refuses (e.g. the token's user is not a member);
        callers treat decorations as best-effort.
        """

    def list_comments(self, number: int) -> list[Comment]:
        """Every comment of PR ``number`` (all pages), oldest first."""

    def post_comment(self, number: int, body: str) -> Comment:
        """Post a comment on PR ``number``; the comment as read back."""

    def edit_comment(self, number: int, comment_id: str, body: str) -> Comment:
        """Replace the body of comment ``comment_id`` of PR ``number``; read back."""

    def delete_comment(self, number: int, comment_id: str) -> None:
        """Delete comment ``comment_id`` of PR ``number``."""

    def permission(self, login: str) -> str:
        """``login``'s permission on the upstream (``admin``, ``write``, ``read``…; ``none``
        when the forge knows no such collaborator)."""

    def collaborators(self) -> dict[str, bool]:
        """The upstream's collaborators as its listing shows them, each with whether it may
        write (every page; a member the listing does not show, say through an organisation,
        is not in it: :meth:`permission` answers for one login)."""

REFUSAL_STATUSES = frozenset({403, 404})


def is_refusal(exc: BackportError) -> bool:
    """Whether a forge error is the service refusing a write (403/404), not a transient failure
    worth trying again on the next run."""
    return exc.details.get("status") in REFUSAL_STATUSES
