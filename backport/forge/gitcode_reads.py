"""The GitCode REST v5 client's reads (see docs/gitcode.md); writes are in :mod:`.gitcode`.

List filters are never trusted: every item is matched here, and a PR found in a listing is read
again whole (a list item's body may be cut short). The upstream's open (and locked) PRs are
listed once a run, oldest first, and kept current by this client's own writes; the merged PRs
into a target are read newest first down to the number asked.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from backport.config.model import fork_of
from backport.errors import BackportError
from backport.forge import gitcode_json as wire
from backport.forge.base import WRITE_PERMISSIONS, Comment, PrFile, PullRequest, SourcePrInfo
from backport.forge.http import ApiClient, ApiError, seg
from backport.forge.token import askpass_env

log = logging.getLogger(__name__)

LISTING_TTL = 300.0  # seconds a listing of open PRs is reused
STABLE_ORDER = {"sort": "created", "direction": "asc"}  # new PRs land on the last page
SET_TOKEN = "set GITCODE_TOKEN (or BACKPORT_TOKEN) to a personal access token"


class GitCodeReads:
    """What :class:`~backport.forge.gitcode.GitCodeForge` reads, and the listing it keeps."""

    name = "gitcode"

    def __init__(self, api_url: str, upstream: str, fork: str, token: str | None, *,
                 web_url: str = "https://gitcode.com", client: ApiClient | None = None,
                 settle: float = 2.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api_url = api_url.rstrip("/")
        self.upstream = upstream
        self._fork = fork  # "" follows the token: `fork`
        self.web_url = web_url.rstrip("/")
        self._token = token
        self.client = client or ApiClient(self.api_url, token, sleep=sleep)
        self.settle = settle  # seconds to let a new PR or a pushed branch show up
        self._sleep = sleep
        self._clock = clock
        self._base_path = "/repos/" + "/".join(seg(part) for part in upstream.split("/", 1))
        self.login: str | None = None  # the token's own user (GET /user)
        self._lock = threading.RLock()
        self._open: dict[int, dict[str, Any]] | None = None  # the open PRs, by number
        self._open_at = 0.0
        self._closed_for: set[tuple[str, str]] = set()  # (head, base) of PRs closed as wrong
        self._created: set[int] = set()  # PRs this client opened (no issue linked yet)
        # base -> (read at, every merged PR above this number listed, those PRs by number)
        self._merged: dict[str, tuple[float, int, dict[int, dict[str, Any]]]] = {}
        self._after_post: dict[int, list[Comment]] = {}  # a post's read-back, listed once
        self._issue_states: dict[int, str] = {}
        self._whole: dict[int, dict[str, Any]] = {}  # each PR as this client last read or wrote it
        self._listed_at: dict[int, str] = {}  # each PR's updated_at as the last listing showed

    @property
    def fork(self) -> str:
        """The fork: as branches.yaml names it, else the token's login's (``GET /user``)."""
        return self._fork or fork_of(self.upstream, self.current_user())

    def _pulls(self, suffix: str = "") -> str:
        return f"{self._base_path}/pulls{suffix}"

    def _to_pr(self, data: dict[str, Any]) -> PullRequest:
        number = wire.pr_number(data)
        head, base = wire.obj(data, "head"), wire.obj(data, "base")
        state = wire.text(data.get("state")).lower()  # locked: open, its talk frozen
        state = ("merged" if state == "merged" or wire.text(data.get("merged_at")) else
                 "open" if state in ("open", "opened", "reopened", "locked", "") else "closed")
        draft, title = wire.is_draft(data), wire.text(data.get("title"))
        url = (wire.text(data.get("html_url")) or wire.text(data.get("web_url"))
               or f"{self.web_url}/{self.upstream}/pull/{number}")
        return PullRequest(
            number=number, url=url,
            title=wire.strip_wip(title) if draft else title, body=wire.body_of(data),
            head=wire.text(head.get("ref")) or wire.text(data.get("source_branch")),
            head_repo=wire.repo_of(head) or "",
            base=wire.text(base.get("ref")) or wire.text(data.get("target_branch")),
            state=state, draft=draft, author=wire.author_of(data))

    def _from_fork(self, data: dict[str, Any]) -> bool | None:
        """Whether the PR's head lives on the fork; None when the object does not say."""
        head = wire.obj(data, "head")
        repo = wire.repo_of(head)
        if repo:
            return wire.norm_repo(repo) == wire.norm_repo(self.fork)
        login = wire.obj(head, "user").get("login")
        if login:
            return login.casefold() == self.fork.partition("/")[0].casefold()
        return None

    def _pages(self, path: str, params: dict[str, Any],
               key: Callable[[dict[str, Any]], str] | None = None) -> Iterator[dict[str, Any]]:
        return wire.pages(self.client.get, self.api_url, path, params, key)

    def _open_prs(self, *, fresh: bool = False) -> dict[int, dict[str, Any]]:
        """The upstream's open (and locked) PRs by number, oldest first (a PR opened meanwhile
        cannot shift one past a page boundary); a PR this client opened that a lagging listing
        leaves out stays as last seen."""
        with self._lock:
            now = self._clock()
            if fresh or self._open is None or now - self._open_at > LISTING_TTL:
                listing = {n: item for state in ("open", "locked") for n, item in wire.numbered(
                    self._pages(self._pulls(), {"state": state, **STABLE_ORDER}))}
                self._listed_at = {n: wire.text(item.get("updated_at"))
                                   for n, item in listing.items()}
                kept = self._open or {}  # a listing may lag behind a create: keep those
                listing.update({n: kept[n] for n in self._created - set(listing) if n in kept})
                self._open, self._open_at = listing, now
            return self._open

    def _remember(self, number: int, data: dict[str, Any]) -> None:
        """Keep PR ``number``'s whole copy and the kept listing as just read or written."""
        with self._lock:
            self._whole[number] = data
            if self._open is None:
                return
            for number, item in wire.numbered(iter([data])):
                if self._to_pr(item).state == "open":
                    self._open[number] = {**self._open.get(number, {}), **item}
                else:
                    self._open.pop(number, None)

    def missing(self) -> list[str]:
        return [] if self._token else [f"no GitCode token for {self.api_url}: {SET_TOKEN}, or "
                                       "store one with git's credential helper"]

    def preflight(self) -> None:
        self.current_user()  # a token, and one GitCode takes
        fork_role = "fork in branches.yaml" if self._fork else "fork that follows the token's login"
        for role, repo, code in (
                ("upstream in branches.yaml", self.upstream, "upstream-unreachable"),
                (fork_role, self.fork, "fork-unreachable")):
            owner, _, name = repo.partition("/")
            try:
                self.client.get(f"/repos/{seg(owner)}/{seg(name)}")
            except ApiError as exc:
                if exc.not_found:
                    raise BackportError(
                        code, f"GitCode has no repository {repo} (the {role}) visible "
                              f"to this token: GET {self.api_url}/repos/{owner}/{name} answered "
                              f"{exc.status}: {exc.server_message}.") from None
                raise

    def current_user(self) -> str:
        """The token's own login (``GET /user``, once)."""
        with self._lock:
            if self.login is not None:
                return self.login
            if not self._token:
                raise BackportError("auth", f"No GitCode token for {self.api_url}; {SET_TOKEN}.")
            try:
                data = self.client.get("/user")
            except ApiError as exc:
                if exc.status == 401:
                    raise BackportError(
                        "auth", f"GitCode rejected the token (401 Unauthorized) at GET "
                                f"{self.api_url}/user; {SET_TOKEN} that is valid.") from None
                raise
            login = wire.text(data.get("login")) if isinstance(data, dict) else ""
            if not login and not self._fork:
                raise BackportError("forge", f"GET {self.api_url}/user named no login, so the fork "
                                             "cannot follow the token; set fork: in branches.yaml")
            self.login = login or self._fork.partition("/")[0]
            return self.login

    def push_credentials(self, url: str) -> dict[str, str] | None:
        """Environment for ``git push`` over HTTPS: the token via askpass, never in argv or URL,
        as the token's own login."""
        if self._token and url.startswith(("https://", "http://")):
            return askpass_env(self._token, self.current_user())
        return None

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        return self._match(self._open_prs().values(), head, base)

    def later_prs(self, number: int, base: str) -> list[PullRequest]:
        """The open PRs from the kept listing and the merged ones into ``base``."""
        found = {**self._open_prs(), **self._merged_into(base, number)}
        prs = (self._to_pr(item) for n, item in sorted(found.items()) if n > number)
        return [pr for pr in prs if pr.base == base and pr.state in ("open", "merged")]

    def _merged_into(self, base: str, number: int) -> dict[int, dict[str, Any]]:
        """The merged PRs into ``base`` numbered above ``number`` (maybe more), read newest first
        until one at or below it (whole where the order is ignored); kept for later asks."""
        with self._lock:
            kept = self._merged.get(base)
            if kept is not None and kept[1] <= number and \
                    self._clock() - kept[0] <= LISTING_TTL:
                return kept[2]
        read_at = self._clock()
        found: dict[int, dict[str, Any]] = {}
        previous: int | None = None
        ordered, reached = True, 0  # reached: every merged PR above it was listed
        newest_first = {"state": "merged", "base": base, "sort": "created", "direction": "desc"}
        for current, item in wire.numbered(self._pages(self._pulls(), newest_first)):
            ordered = ordered and (previous is None or current < previous)
            if ordered and previous is not None and current <= number:
                reached = number
                break
            previous = current
            found[current] = item
        with self._lock:
            self._merged[base] = (read_at, reached, found)
        return found

    def _opened_since(self, head: str, base: str) -> PullRequest | None:
        """Right before a create: the open PRs into ``base`` read now, and the listing's locked
        ones (one locked since was listed as open); without a listing kept, the whole one."""
        with self._lock:
            listed = self._open is not None and self._clock() - self._open_at <= LISTING_TTL
        if not listed:
            return self._match(self._open_prs(fresh=True).values(), head, base)
        fresh = dict(wire.numbered(self._pages(self._pulls(), {"state": "open", "base": base,
                                                          **STABLE_ORDER})))
        with self._lock:
            kept = dict(self._open or {})
            if self._open is not None:
                for number, item in fresh.items():
                    self._open[number] = {**self._open.get(number, {}), **item}
        locked = [item for item in kept.values()
                  if wire.text(item.get("state")).lower() == "locked"]
        return self._match([*fresh.values(), *locked], head, base)

    def _match(self, items: Iterable[dict[str, Any]], head: str,
               base: str) -> PullRequest | None:
        for item in list(items):
            pr = self._to_pr(item)
            if pr.state != "open" or pr.head != head or pr.base != base:
                continue
            if self._from_fork(item):
                # A list item is a summary (its body may be cut short): read the PR itself.
                found = self.get_pr(pr.number)
                if found.state == "open":
                    return found
        return None

    def get_pr(self, number: int) -> PullRequest:
        return self._to_pr(self._get_pr_data(number))

    def current_pr(self, number: int) -> PullRequest:
        """The PR as last read or written where the last listing shows it unchanged; else read."""
        with self._lock:
            whole = self._whole.get(number)
            stamp = self._listed_at.get(number)
        if whole is not None and stamp and stamp == wire.text(whole.get("updated_at")):
            return self._to_pr(whole)
        return self.get_pr(number)

    def get_source_pr(self, number: int) -> SourcePrInfo:
        """``GET …/pulls/{n}`` and its issues; ``merge_commit_sha`` only where shown."""
        data = self._get_pr_data(number)
        pr = self._to_pr(data)
        merge_sha = wire.text(data.get("merge_commit_sha")).strip()
        return SourcePrInfo(
            number=pr.number, state=pr.state, title=wire.strip_wip(pr.title), body=pr.body,
            base=pr.base, head=pr.head, merge_commit_sha=merge_sha if len(merge_sha) == 40 else "",
            author=wire.text(wire.obj(data, "user").get("login")),
            issues=tuple(self.linked_issues(number)),
            merged_at=wire.text(data.get("merged_at")).strip())

    def pr_files(self, number: int) -> list[PrFile]:
        """``GET …/pulls/{n}/files`` (pages followed, though none documented)."""
        found = (wire.pr_file(item) for item in self._pages(
            self._pulls(f"/{seg(number)}/files"), {}, key=lambda i: wire.text(i.get("filename"))))
        return list(dict.fromkeys(file for file in found if file is not None))

    def _get_pr_data(self, number: int) -> dict[str, Any]:
        try:
            data = self.client.get(self._pulls(f"/{seg(number)}"))
        except ApiError as exc:
            if exc.not_found:
                raise BackportError("forge", f"GitCode has no PR !{number} in {self.upstream} "
                                             f"({exc.status}: {exc.server_message}).",
                                    details={"status": exc.status, "not_found": True}) from None
            raise
        if not isinstance(data, dict):
            raise BackportError("forge", f"GitCode API GET {self.api_url}"
                                         f"{self._pulls(f'/{number}')} did not return a JSON "
                                         "object.")
        self._remember(number, data)
        return data

    def list_prs(self, state: str = "open", *, fresh: bool = False) -> list[PullRequest]:
        """A PR this client opened is taken as the fork's where no head repository is shown."""
        if state == "open":
            with self._lock:
                created = set(self._created)
            prs = [self._to_pr(item) for item in self._open_prs(fresh=fresh).values()]
            return [dataclasses.replace(pr, head_repo=self.fork) if pr.number in created
                    and not pr.head_repo else pr for pr in prs]
        return [self._to_pr(item) for item in self._pages(self._pulls(),
                                                          {"state": state, **STABLE_ORDER})]

    def issue_state(self, issue: int) -> str:
        """``GET …/issues/{n}``'s ``state``, ``""`` when it cannot be read; once a run."""
        with self._lock:
            if issue in self._issue_states:
                return self._issue_states[issue]
        try:
            data = self.client.get(f"{self._base_path}/issues/{seg(issue)}")
        except ApiError as exc:
            log.warning("GitCode issue #%s could not be read: %s", issue, exc.message)
            data = None
        state = wire.text(data.get("state")).lower() if isinstance(data, dict) else ""
        with self._lock:
            self._issue_states[issue] = "open" if state in ("opened", "reopened",
                                                            "progressing") else state
        return self._issue_states[issue]

    def linked_issues(self, number: int) -> list[int]:
        return wire.issue_numbers(list(self._pages(self._pulls(f"/{seg(number)}/issues"), {})))

    def list_comments(self, number: int) -> list[Comment]:
        """The comments by ``created_at``; right after a post, the post's own read-back."""
        with self._lock:
            listed = self._after_post.pop(number, None)
        if listed is not None:
            return listed
        items = [wire.comment_of(item)
                 for item in self._pages(self._pulls(f"/{seg(number)}/comments"), {})]
        return sorted(items, key=lambda c: (c.created_at, int(c.id) if c.id.isdigit() else 0))

    def _get_found(self, path: str) -> Any:
        """``GET path``'s answer; None where GitCode has no such thing."""
        try:
            return self.client.get(path)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def permission(self, login: str) -> str:
        """``GET …/collaborators/{login}/permission``; ``none`` if unknown."""
        data = self._get_found(f"{self._base_path}/collaborators/{seg(login)}/permission")
        value = wire.text(data.get("permission")).strip().lower() if isinstance(data, dict) else ""
        return value or "none"

    def collaborators(self) -> dict[str, bool]:
        """Each ``login`` (or ``username``): ``permissions.admin`` or ``.push``, or a writer's
        ``permission``."""
        found: dict[str, bool] = {}
        for item in self._pages(f"{self._base_path}/collaborators", {},
                                key=lambda i: str(i.get("id", i.get("username")))):
            login = wire.text(item.get("login")) or wire.text(item.get("username"))
            if not login.strip():
                continue
            flags = wire.obj(item, "permissions")
            named = wire.text(item.get("permission")).strip().lower()
            found[login.strip()] = (flags.get("admin") is True or flags.get("push") is True
                                    or named in WRITE_PERMISSIONS)
        return found
