"""The GitCode REST v5 forge; every behaviour it relies on is listed in ``docs/gitcode.md``.

Highlights: list filters are never trusted (matching happens here) and a found PR is re-read in
full; before creating, the fork branch must exist at the SHA just pushed; the head is sent as
``owner/repo:branch`` and another form is tried only when that form itself is refused (403/404);
every created PR is re-read and, if GitCode resolved its head anywhere but the fork branch, closed
at once; a create that failed in transit or was refused as a duplicate (in English or Chinese) is
looked up before anything is sent again.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from backport.errors import BackportError
from backport.forge.base import PullRequest
from backport.forge.http import ApiClient, ApiError, ApiTransportError, seg
from backport.forge.token import askpass_env
from backport.redact import redact

log = logging.getLogger(__name__)

PER_PAGE = 100
MAX_PAGES = 50

# Creates are serialised per (api, upstream, head, base) inside one process.
_create_locks: dict[tuple[str, str, str, str], threading.Lock] = {}
_create_locks_guard = threading.Lock()


def _create_lock(key: tuple[str, str, str, str]) -> threading.Lock:
    with _create_locks_guard:
        return _create_locks.setdefault(key, threading.Lock())


def _norm_repo(value: str) -> str:
    return "/".join(part.strip() for part in value.split("/")).casefold()


def _repo_of(side: dict[str, Any]) -> str | None:
    """``owner/repo`` of a PR's head or base object, or None when the object does not say."""
    repo = side.get("repo") or {}
    if isinstance(repo, dict):
        for key in ("full_path", "full_name", "path_with_namespace"):
            value = repo.get(key)
            if isinstance(value, str) and "/" in value:
                return "/".join(p.strip() for p in value.split("/"))
        owner = (repo.get("owner") or {}).get("login") or (repo.get("namespace") or {}).get("path")
        if owner and repo.get("path"):
            return f"{owner}/{repo['path']}"
    return None


def _obj(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is a JSON object, else an empty one."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return int(str(value).strip())


WIP_PREFIXES = ("[WIP] ", "[WIP]", "WIP: ", "Draft: ")  # what GitCode may put before a draft's title


def _strip_wip(title: str) -> str:
    for prefix in WIP_PREFIXES:
        if title.startswith(prefix):
            return title[len(prefix):]
    return title


def _duplicate(message: str) -> bool:
    """Whether an error message says the PR already exists (GitCode answers in either language)."""
    return "already exist" in message.lower() or "已存在" in message


class GitCodeForge:
    """Find-or-create PRs on GitCode (REST v5) from ``fork`` branches into ``upstream``."""

    name = "gitcode"
    dry_run = False

    def __init__(self, api_url: str, upstream: str, fork: str, token: str | None, *,
                 web_url: str = "https://gitcode.com", timeout: float = 30.0,
                 client: ApiClient | None = None, max_pages: int = MAX_PAGES,
                 settle: float = 2.0, sleep: Callable[[float], None] = time.sleep) -> None:
        self.api_url = api_url.rstrip("/")
        self.upstream = upstream
        self.fork = fork
        self.web_url = web_url.rstrip("/")
        self.has_token = bool(token)
        self._token = token
        self.client = client or ApiClient(self.api_url, token, timeout=timeout, sleep=sleep)
        self.max_pages = max_pages
        self.settle = settle  # seconds to let a just-created PR or a pushed branch show up
        self._sleep = sleep
        owner, _, repo = upstream.partition("/")
        self._base_path = f"/repos/{seg(owner)}/{seg(repo)}"
        self.fork_owner = fork.partition("/")[0]

    # ------------------------------------------------------------------ helpers
    def _pulls(self, suffix: str = "") -> str:
        return f"{self._base_path}/pulls{suffix}"

    def _pr_url(self, data: dict[str, Any], number: int) -> str:
        return (_text(data.get("html_url")) or _text(data.get("web_url"))
                or f"{self.web_url}/{self.upstream}/pull/{number}")

    def _to_pr(self, data: dict[str, Any]) -> PullRequest:
        number = _int(data.get("number") if data.get("number") not in (None, "") else data.get("iid"))
        head, base = _obj(data, "head"), _obj(data, "base")
        state = _text(data.get("state")).lower()
        if state == "merged" or _text(data.get("merged_at")):
            state = "merged"
        elif state in ("open", "opened", "reopened", ""):
            state = "open"
        else:
            state = "closed"
        draft = bool(data.get("draft") or data.get("work_in_progress"))
        title = _text(data.get("title"))
        return PullRequest(
            number=number,
            url=self._pr_url(data, number),
            title=_strip_wip(title) if draft else title,
            body=_text(data.get("body")) or _text(data.get("description")),
            head=_text(head.get("ref")) or _text(data.get("source_branch")),
            head_repo=_repo_of(head) or "",
            base=_text(base.get("ref")) or _text(data.get("target_branch")),
            state=state,
            draft=draft,
        )

    def _from_fork(self, data: dict[str, Any]) -> bool | None:
        """Whether the PR's head lives on the fork; None when the object does not say."""
        head = _obj(data, "head")
        repo = _repo_of(head)
        if repo:
            return _norm_repo(repo) == _norm_repo(self.fork)
        login = _obj(head, "user").get("login")
        if login:
            return login.casefold() == self.fork_owner.casefold()
        return None

    def _pages(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list: until an empty/short page or a repeated page."""
        seen_pages: set[tuple] = set()
        for page in range(1, self.max_pages + 1):
            items = self.client.get(path, {**params, "page": page, "per_page": PER_PAGE})
            if not isinstance(items, list) or not items:
                return
            key = tuple(str(i.get("id", i.get("number"))) if isinstance(i, dict) else str(i)
                        for i in items)
            if key in seen_pages:
                return
            seen_pages.add(key)
            yield from (i for i in items if isinstance(i, dict))
            if len(items) < PER_PAGE:
                return
        raise BackportError("forge", f"GitCode API GET {self.api_url}{path} returned more than "
                                     f"{self.max_pages} pages of {PER_PAGE}; refusing to guess "
                                     "whether a PR already exists.")

    # ------------------------------------------------------------------ protocol
    def preflight(self) -> None:
        if not self.has_token:
            raise BackportError("auth", f"No GitCode token for {self.api_url}; set GITCODE_TOKEN "
                                        "(or BACKPORT_TOKEN) to a personal access token.")
        try:
            self.client.get("/user")
        except ApiError as exc:
            if exc.status == 401:
                raise BackportError(
                    "auth", f"GitCode rejected the token (401 Unauthorized) at GET {self.api_url}/user; "
                            "set GITCODE_TOKEN to a valid personal access token.") from None
            raise
        for role, repo, code in (("upstream", self.upstream, "upstream-unreachable"),
                                 ("fork", self.fork, "fork-unreachable")):
            owner, _, name = repo.partition("/")
            try:
                self.client.get(f"/repos/{seg(owner)}/{seg(name)}")
            except ApiError as exc:
                if exc.not_found:
                    raise BackportError(
                        code, f"GitCode has no repository {repo} (the {role} in branches.yaml) visible "
                              f"to this token: GET {self.api_url}/repos/{owner}/{name} answered "
                              f"{exc.status}: {exc.server_message}.") from None
                raise

    def push_credentials(self, url: str) -> dict[str, str] | None:
        """Environment for ``git push`` over HTTPS: the token via askpass, never in argv or URL."""
        if self._token and url.startswith(("https://", "http://")):
            return askpass_env(self._token, self.fork_owner)
        return None

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        for item in self._pages(self._pulls(), {"state": "open", "base": base}):
            pr = self._to_pr(item)
            if pr.state != "open" or pr.head != head or pr.base != base:
                continue
            if self._from_fork(item):
                # A list item is a summary (its body may be cut short): read the PR itself.
                return self.get_pr(pr.number)
        return None

    def get_pr(self, number: int) -> PullRequest:
        return self._to_pr(self._get_pr_data(number))

    def _get_pr_data(self, number: int) -> dict[str, Any]:
        try:
            data = self.client.get(self._pulls(f"/{seg(number)}"))
        except ApiError as exc:
            if exc.not_found:
                raise BackportError("forge", f"GitCode has no PR !{number} in {self.upstream} "
                                             f"({exc.status}: {exc.server_message}).") from None
            raise
        if not isinstance(data, dict):
            raise BackportError("forge", f"GitCode API GET {self.api_url}{self._pulls(f'/{number}')} "
                                         "did not return a JSON object.")
        return data

    def list_prs(self, state: str = "open") -> list[PullRequest]:
        return [self._to_pr(item) for item in self._pages(self._pulls(), {"state": state})]

    def create_pr(self, head: str, base: str, title: str, body: str, *,
                  draft: bool = False, head_sha: str | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        with _create_lock((self.api_url, self.upstream, head, base)):
            existing = self.find_open_pr(head, base)
            if existing is not None:
                return existing
            self._check_fork_branch(head, head_sha)
            return self._create(head, base, title, body, draft, head_sha, close_related_issue)

    def _branch_sha(self, repo: str, branch: str) -> str | None:
        """The commit ``repo``'s ``branch`` points at on GitCode, or None when it does not exist."""
        owner, _, name = repo.partition("/")
        try:
            data = self.client.get(f"/repos/{seg(owner)}/{seg(name)}/branches/{seg(branch)}")
        except ApiError as exc:
            if exc.not_found:
                return None
            raise
        commit = data.get("commit") if isinstance(data, dict) else None
        return _text(commit.get("id") if isinstance(commit, dict) else None) or ""

    def _check_fork_branch(self, head: str, head_sha: str | None) -> None:
        """Refuse to create unless the fork branch exists (at ``head_sha``, when given)."""
        sha: str | None = None
        for attempt in range(3):  # a branch pushed a moment ago may take a while to show
            if attempt:
                self._sleep(self.settle)
            sha = self._branch_sha(self.fork, head)
            if sha is not None and (not head_sha or not sha or sha == head_sha):
                return
        if sha is None:
            raise BackportError(
                "forge", f"The fork branch {self.fork}:{head} does not exist on GitCode (GET "
                         f"{self.api_url}/repos/{self.fork}/branches/{head} found nothing), so no "
                         "PR was opened; push it to the fork first.")
        raise BackportError(
            "forge", f"The fork branch {self.fork}:{head} is at {sha[:9]} on GitCode, not at the "
                     f"{head_sha[:9] if head_sha else '?'} just pushed, so no PR was opened; "
                     "check who pushed to the fork, then run again.")

    def _head_forms(self, head: str) -> list[dict[str, str]]:
        if _norm_repo(self.fork) == _norm_repo(self.upstream):
            return [{"head": head}]
        return [
            {"head": f"{self.fork}:{head}"},
            {"head": f"{self.fork_owner}:{head}", "fork_path": self.fork},
        ]

    def _create(self, head: str, base: str, title: str, body: str, draft: bool,
                head_sha: str | None, close_related_issue: bool | None) -> PullRequest:
        forms = self._head_forms(head)
        in_transit_retries = 1
        i = 0
        while i < len(forms):
            payload: dict[str, Any] = {"title": title, "head": forms[i]["head"], "base": base,
                                       "body": body}
            if "fork_path" in forms[i]:
                payload["fork_path"] = forms[i]["fork_path"]
            if draft:
                payload["draft"] = True
            if close_related_issue is not None:
                payload["close_related_issue"] = close_related_issue
            try:
                answer = self.client.request("POST", self._pulls(), json=payload, retry=False)
            except ApiTransportError as exc:
                found = self._look_up_after_failure(head, base, exc.message)
                if found is not None:
                    return found
                if in_transit_retries <= 0:
                    raise
                in_transit_retries -= 1
                continue
            except ApiError as exc:
                if exc.code == "auth":
                    raise
                # Whatever the refusal, the PR may exist (a duplicate, a create that went
                # through): look before sending anything else.
                found = self._look_up_after_failure(head, base, exc.message,
                                                    settle=_duplicate(exc.server_message)
                                                    or exc.status in (409, 429) or exc.status >= 500)
                if found is not None:
                    return found
                if exc.status >= 500 and in_transit_retries > 0:
                    in_transit_retries -= 1
                    continue
                if exc.status in (403, 404) and i + 1 < len(forms):
                    log.info("GitCode refused head form %r (%s); trying the next form",
                             forms[i]["head"], exc.status)
                    i += 1
                    continue
                raise BackportError(
                    "forge", redact(f"GitCode did not open a PR from {self.fork}:{head} into "
                                    f"{self.upstream}:{base}: POST {self.api_url}{self._pulls()} "
                                    f"with head={forms[i]['head']!r} answered {exc.status}: "
                                    f"{exc.server_message}."),
                    details={"status": exc.status}) from None
            return self._verify_created(answer.data, head, base, head_sha)
        raise BackportError("forge", f"GitCode could not open a PR from {self.fork}:{head} into "
                                     f"{self.upstream}:{base}.")

    def _look_up_after_failure(self, head: str, base: str, why: str, *,
                               settle: bool = True) -> PullRequest | None:
        log.warning("%s; checking whether the PR exists anyway", why.rstrip("."))
        for attempt in range(2 if settle else 1):
            if attempt:
                self._sleep(self.settle)
            found = self.find_open_pr(head, base)
            if found is not None:
                return found
        return None

    def _verify_created(self, data: Any, head: str, base: str,
                        head_sha: str | None) -> PullRequest:
        """Re-read a created PR; close it at once when GitCode took its head from elsewhere."""
        if not isinstance(data, dict) or data.get("number", data.get("iid")) in (None, ""):
            found = self.find_open_pr(head, base)
            if found is not None:
                return found
            raise BackportError("forge", f"GitCode accepted the PR from {self.fork}:{head} into "
                                         f"{self.upstream}:{base} but returned no PR number.")
        number = _int(data.get("number") if data.get("number") not in (None, "") else data.get("iid"))
        full = self._get_pr_data(number)
        pr = self._to_pr(full)
        from_fork = self._from_fork(full)
        sha = _text(_obj(full, "head").get("sha"))
        wrong_sha = bool(head_sha and sha and sha != head_sha)
        if pr.head == head and from_fork is not False and not wrong_sha:
            if from_fork is None:
                log.warning("GitCode PR !%s does not say which repository its head is in; "
                            "assuming %s", number, self.fork)
                pr = dataclasses.replace(pr, head_repo=self.fork)
            return pr
        source = f"{pr.head_repo or 'an unknown repository'}:{pr.head or '?'}"
        if _norm_repo(pr.head_repo) == _norm_repo(self.upstream):
            source = f"the upstream branch {source}"
        if wrong_sha:
            source += f" at {sha[:9]}"
        wanted = f"{self.fork}:{head}" + (f" at {head_sha[:9]}" if head_sha else "")
        closed = self._close(number, pr)
        tail = ("backport closed it at once, so no wrong PR stays open" if closed is None else
                f"closing it failed ({closed}), so close it by hand")
        raise BackportError(
            "forge", redact(f"GitCode opened PR !{number} ({pr.url}) from {source} instead of "
                            f"the fork branch {wanted}; {tail}."),
            details={"number": number, "url": pr.url, "closed": closed is None})

    def _close(self, number: int, pr: PullRequest) -> str | None:
        """Close a PR (``PATCH state=closed``); None when closed, else why not."""
        try:
            self.client.request("PATCH", self._pulls(f"/{seg(number)}"),
                                json={"title": pr.title, "body": pr.body, "state": "closed"})
            if self.get_pr(number).state != "open":
                return None
            return "GitCode still shows it open"
        except BackportError as exc:
            return exc.message.rstrip(".")

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        payload: dict[str, Any] = {"title": title, "body": body}
        if draft is not None:
            payload["draft"] = draft
        if close_related_issue is not None:
            payload["close_related_issue"] = close_related_issue
        self.client.request("PATCH", self._pulls(f"/{seg(number)}"), json=payload)
        return self.get_pr(number)

    def linked_issues(self, number: int) -> list[int]:
        result: list[int] = []
        for item in self._pages(self._pulls(f"/{seg(number)}/issues"), {}):
            value = item.get("number") if isinstance(item, dict) else item
            try:
                result.append(_int(value))
            except (TypeError, ValueError):
                continue
        return result

    def link_issue(self, number: int, issue: int) -> None:
        if issue in self.linked_issues(number):
            return
        path = self._pulls(f"/{seg(number)}/issues")
        try:
            self.client.request("POST", path, json=[int(issue)], retry=False)
        except (ApiTransportError, ApiError) as exc:
            if isinstance(exc, ApiError) and exc.status < 500 and exc.status != 429:
                raise
            if issue in self.linked_issues(number):
                return
            self.client.request("POST", path, json=[int(issue)], retry=False)

    def add_comment(self, number: int, body: str) -> None:
        self.client.request("POST", self._pulls(f"/{seg(number)}/comments"), json={"body": body},
                            retry=False)

    def decorate(self, number: int, *, labels: tuple[str, ...] = (),
                 assignees: tuple[str, ...] = (), reviewers: tuple[str, ...] = (),
                 testers: tuple[str, ...] = ()) -> None:
        # Each of these adds to the existing set, so repeating one is harmless: retry allowed.
        n = seg(number)
        if labels:
            self.client.request("POST", self._pulls(f"/{n}/labels"), json=list(labels), retry=True)
        if assignees:
            self.client.request("POST", self._pulls(f"/{n}/assignees"),
                                json={"assignees": ",".join(assignees)}, retry=True)
        if reviewers:
            self.client.request("POST", self._pulls(f"/{n}/reviewers"),
                                json={"reviewers": ",".join(reviewers), "add": True}, retry=True)
        if testers:
            self.client.request("POST", self._pulls(f"/{n}/testers"),
                                json={"testers": ",".join(testers), "add": True}, retry=True)
