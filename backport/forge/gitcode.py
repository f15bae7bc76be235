"""The GitCode REST v5 forge, written against the quirks in ``shared/docs/gitcode-api.md``.

Highlights: list filters are never trusted (matching happens here), the create response is
merge-request shaped so every created PR is re-read and verified to come from the fork, a
create that failed in transit is looked up before it is ever sent again, and the cross-fork
``head`` form falls back through the three forms seen in the wild.
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


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return int(str(value).strip())


class GitCodeForge:
    """Find-or-create PRs on GitCode (REST v5) from ``fork`` branches into ``upstream``."""

    name = "gitcode"

    def __init__(self, api_url: str, upstream: str, fork: str, token: str | None, *,
                 web_url: str = "https://gitcode.com", timeout: float = 30.0,
                 client: ApiClient | None = None, max_pages: int = MAX_PAGES,
                 settle: float = 2.0, sleep: Callable[[float], None] = time.sleep) -> None:
        self.api_url = api_url.rstrip("/")
        self.upstream = upstream
        self.fork = fork
        self.web_url = web_url.rstrip("/")
        self.has_token = bool(token)
        self.client = client or ApiClient(self.api_url, token, timeout=timeout, sleep=sleep)
        self.max_pages = max_pages
        self.settle = settle  # seconds to let a just-created PR show up in lists
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
        head: dict[str, Any] = data["head"] if isinstance(data.get("head"), dict) else {}
        base: dict[str, Any] = data["base"] if isinstance(data.get("base"), dict) else {}
        state = _text(data.get("state")).lower()
        if state == "merged" or _text(data.get("merged_at")):
            state = "merged"
        elif state in ("open", "opened", "reopened", ""):
            state = "open"
        else:
            state = "closed"
        return PullRequest(
            number=number,
            url=self._pr_url(data, number),
            title=_text(data.get("title")),
            body=_text(data.get("body")) or _text(data.get("description")),
            head=_text(head.get("ref")) or _text(data.get("source_branch")),
            head_repo=_repo_of(head) or "",
            base=_text(base.get("ref")) or _text(data.get("target_branch")),
            state=state,
            draft=bool(data.get("draft") or data.get("work_in_progress")),
        )

    def _from_fork(self, data: dict[str, Any]) -> bool | None:
        """Whether the PR's head lives on the fork; None when the object does not say."""
        head: dict[str, Any] = data["head"] if isinstance(data.get("head"), dict) else {}
        repo = _repo_of(head)
        if repo:
            return _norm_repo(repo) == _norm_repo(self.fork)
        login = (head.get("user") or {}).get("login") if isinstance(head.get("user"), dict) else None
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

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        for item in self._pages(self._pulls(), {"state": "open", "base": base}):
            pr = self._to_pr(item)
            if pr.state != "open" or pr.head != head or pr.base != base:
                continue
            if self._from_fork(item):
                return pr
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
                  draft: bool = False) -> PullRequest:
        with _create_lock((self.api_url, self.upstream, head, base)):
            existing = self.find_open_pr(head, base)
            if existing is not None:
                return existing
            return self._create(head, base, title, body, draft)

    def _head_forms(self, head: str) -> list[dict[str, str]]:
        if _norm_repo(self.fork) == _norm_repo(self.upstream):
            return [{"head": head}]
        return [
            {"head": f"{self.fork}:{head}"},
            {"head": f"{self.fork_owner}:{head}", "fork_path": self.fork},
            {"head": f"{self.fork_owner}:{head}"},
        ]

    def _create(self, head: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        forms = self._head_forms(head)
        errors: list[str] = []
        in_transit_retries = 1
        i = 0
        while i < len(forms):
            payload: dict[str, Any] = {"title": title, "head": forms[i]["head"], "base": base,
                                       "body": body}
            if "fork_path" in forms[i]:
                payload["fork_path"] = forms[i]["fork_path"]
            if draft:
                payload["draft"] = True
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
                if exc.status >= 500 or exc.status == 429 or exc.status == 409 or \
                        "already exist" in exc.server_message.lower():
                    found = self._look_up_after_failure(head, base, exc.message)
                    if found is not None:
                        return found
                    if exc.status >= 500 and in_transit_retries > 0:
                        in_transit_retries -= 1
                        continue
                    raise
                if exc.code == "auth":
                    raise
                if self._form_rejected(exc) and i + 1 < len(forms):
                    errors.append(f"head={forms[i]['head']!r}: {exc.status} {exc.server_message}")
                    log.info("GitCode refused head form %r (%s); trying the next form",
                             forms[i]["head"], exc.status)
                    i += 1
                    continue
                if errors:
                    raise BackportError(
                        "forge", redact(f"GitCode could not open a PR from {self.fork}:{head} into "
                                        f"{self.upstream}:{base}; every head form was refused, last "
                                        f"{exc.status}: {exc.server_message}.")) from None
                raise
            return self._verify_created(answer.data, head, base)
        raise BackportError("forge", f"GitCode could not open a PR from {self.fork}:{head} into "
                                     f"{self.upstream}:{base}.")

    @staticmethod
    def _form_rejected(exc: ApiError) -> bool:
        if exc.status in (403, 404):
            return True
        text = exc.server_message.lower()
        return 400 <= exc.status < 500 and any(
            word in text for word in ("branch", "not found", "not exist", "fork", "不存在"))

    def _look_up_after_failure(self, head: str, base: str, why: str) -> PullRequest | None:
        log.warning("%s; checking whether the PR was created anyway", why.rstrip("."))
        for attempt in range(2):
            if attempt:
                self._sleep(self.settle)
            found = self.find_open_pr(head, base)
            if found is not None:
                return found
        return None

    def _verify_created(self, data: Any, head: str, base: str) -> PullRequest:
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
        if pr.head != head or from_fork is False:
            source = f"{pr.head_repo or 'an unknown repository'}:{pr.head or '?'}"
            where = "the upstream repository" if _norm_repo(pr.head_repo) == _norm_repo(self.upstream) \
                else source
            raise BackportError(
                "forge", f"GitCode opened PR !{number} ({pr.url}) from {where} ({source}) instead of "
                         f"the fork branch {self.fork}:{head}; close it by hand and check that the "
                         "branch was pushed to the fork.",
                details={"number": number, "url": pr.url})
        if from_fork is None:
            log.warning("GitCode PR !%s does not say which repository its head is in; assuming %s",
                        number, self.fork)
            pr = dataclasses.replace(pr, head_repo=self.fork)
        return pr

    def update_pr(self, number: int, *, title: str, body: str,
                  draft: bool | None = None) -> PullRequest:
        payload: dict[str, Any] = {"title": title, "body": body}
        if draft is not None:
            payload["draft"] = draft
        self.client.request("PATCH", self._pulls(f"/{seg(number)}"), json=payload)
        return self.get_pr(number)

    def linked_issues(self, number: int) -> list[int]:
        data = self.client.get(self._pulls(f"/{seg(number)}/issues"))
        result: list[int] = []
        for item in data if isinstance(data, list) else []:
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
