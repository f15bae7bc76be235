"""The GitCode REST v5 forge; every behaviour it relies on is listed in ``docs/gitcode.md``.

Highlights: list filters are never trusted (matching happens here) and a found PR is re-read in
full; the open (and locked) PRs are listed in a stable order, a page that is not a list is an
error, and the listing serves the finds of a run; right before any create the open PRs
into its base are read afresh;
the head is sent only as ``owner/repo:branch``; a created PR's number is handed over at once,
the PR read back (a 404 is "not yet") and closed only when its head repository and branch are
both shown and wrong, its base is the one asked for and its author the token's user, after a
second read, and never twice for one branch; the create flags are read back and corrected; a
create that failed in transit, answered 5xx or was refused as a duplicate (in English or
Chinese) is looked up, with settle waits, before anything is sent again; every PATCH is checked
against its answer or a read-back (draft always), sent again form-encoded when a field did not
take, and a draft still not taken is set through the ``[WIP] `` title prefix.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from backport.config.model import fork_of
from backport.errors import BackportError
from backport.forge.base import WRITE_PERMISSIONS, Comment, PrFile, PullRequest, SourcePrInfo
from backport.forge.http import DEFAULT_WINDOWS, ApiClient, ApiError, ApiTransportError, seg
from backport.forge.token import askpass_env
from backport.numerals import MAX_DIGITS, json_number
from backport.redact import redact

log = logging.getLogger(__name__)

PER_PAGE = 100
SMALLEST_PAGE = 20  # the documented default page size, used where ``per_page`` is ignored
MAX_PAGES = 50
LISTING_TTL = 300.0  # seconds a listing of open PRs is reused (own writes keep it current)
OPEN_STATES = ("open", "locked")  # the listing states of a PR that is not closed
STABLE_ORDER = {"sort": "created", "direction": "asc"}  # new PRs land on the last page
LINK_ATTEMPTS = 4  # issue-link calls before a transient error is given up (for this run)
LOOKUPS = 3  # listings read after a failed create before anything is sent again
READS_BEFORE_JUDGING = 2  # reads of a created PR, a settle wait apart, before it is judged
CREATED_READS = 5  # reads of a created PR before it is left unverified (404 is "not yet")

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
    """A number of the service's answer, through the one bounded parser (ValueError when it
    is none: at most 10 digits)."""
    found = json_number(value)
    if found is None:
        raise ValueError(f"not a number of at most {MAX_DIGITS} digits")
    return found


WIP_PREFIXES = ("[WIP] ", "[WIP]", "WIP: ", "Draft: ")  # what GitCode may put before a draft's title


def _strip_wip(title: str) -> str:
    for prefix in WIP_PREFIXES:
        if title.startswith(prefix):
            return title[len(prefix):]
    return title


def _duplicate(message: str) -> bool:
    """Whether an error message says the PR already exists (GitCode answers in either language)."""
    return "already exist" in message.lower() or "已存在" in message


def _number(data: dict[str, Any]) -> int:
    return _int(data.get("number") if data.get("number") not in (None, "") else data.get("iid"))


def _author(data: dict[str, Any]) -> str:
    """The login of the PR's author ("" when the object does not say)."""
    for key in ("user", "author"):
        side = _obj(data, key)
        for name in ("login", "username"):
            if _text(side.get(name)):
                return _text(side.get(name))
    return ""


def _flag(value: Any) -> bool:
    """A documented boolean that may come as ``true``, ``1`` or ``"1"``."""
    return value is True or (not isinstance(value, bool) and str(value).strip().lower()
                             in ("1", "true"))


def pr_file(item: dict[str, Any]) -> PrFile | None:
    """One item of ``/pulls/{n}/files`` as the paths before and after the PR."""
    patch = _obj(item, "patch")
    name = _text(item.get("filename")).strip()
    new = _text(patch.get("new_path")).strip() or name
    old = _text(patch.get("old_path")).strip() or new
    if not new:
        return None
    if _flag(patch.get("new_file")):
        return PrFile(None, new)
    if _flag(patch.get("deleted_file")):
        return PrFile(old, None)
    return PrFile(old, new)


@dataclasses.dataclass(frozen=True)
class _Ask:
    """What one create asked for: what the PR GitCode made is judged and corrected against."""

    head: str
    base: str
    title: str
    body: str
    draft: bool | None  # None: nothing asked of it (a PR judged later, `verify_pr`)
    head_sha: str | None
    close_related_issue: bool | None


def _draft(data: dict[str, Any]) -> bool:
    return bool(data.get("draft") or data.get("work_in_progress"))


def _body(data: dict[str, Any]) -> str:
    return _text(data.get("body")) or _text(data.get("description"))


def _field(data: dict[str, Any], key: str) -> Any:
    """One PR field as the forge compares it (title without a draft prefix, body without
    surrounding blank space); None when ``data`` does not show it."""
    if key == "title":
        return _strip_wip(data["title"]) if isinstance(data.get("title"), str) else None
    if key == "body":
        return _body(data).strip() if ("body" in data or "description" in data) else None
    if key == "draft":
        return _draft(data) if ("draft" in data or "work_in_progress" in data) else None
    if key == "state":
        return _text(data.get("state")) or None
    value = data.get(key)
    return value if value is None else value in (True, "true", "True", 1)


def _wanted(key: str, value: Any) -> Any:
    """A value sent, as :func:`_field` would show it once taken."""
    if key == "title":
        return _strip_wip(str(value))
    if key == "body":
        return str(value).strip()
    return value


def _form(fields: dict[str, Any]) -> dict[str, str]:
    """Fields as form values (booleans as ``true``/``false``)."""
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in fields.items()}


def _not_in(wanted: list[int], linked: Sequence[int]) -> list[int]:
    """The issues of ``wanted`` that ``linked`` does not hold, in order."""
    return [i for i in wanted if i not in set(linked)]


def _issue_numbers(answer: Any) -> list[int]:
    result = []
    for item in answer if isinstance(answer, list) else []:
        value = item.get("number") if isinstance(item, dict) else item
        try:
            result.append(_int(value))
        except (TypeError, ValueError):
            continue
    return result


class GitCodeForge:
    """Find-or-create PRs on GitCode (REST v5) from ``fork`` branches into ``upstream``."""

    name = "gitcode"

    def __init__(self, api_url: str, upstream: str, fork: str, token: str | None, *,
                 web_url: str = "https://gitcode.com", timeout: float = 30.0,
                 client: ApiClient | None = None, max_pages: int = MAX_PAGES,
                 settle: float = 2.0, sleep: Callable[[float], None] = time.sleep,
                 windows: tuple[tuple[int, float], ...] = DEFAULT_WINDOWS,
                 notify: Callable[[str], None] | None = None,
                 listing_ttl: float = LISTING_TTL,
                 clock: Callable[[], float] = time.monotonic,
                 pace_dir: Path | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.upstream = upstream
        self._fork = fork  # "" follows the token: `fork`
        self.web_url = web_url.rstrip("/")
        self.has_token = bool(token)
        self._token = token
        self.client = client or ApiClient(self.api_url, token, timeout=timeout, sleep=sleep,
                                          windows=windows, notify=notify, pace_dir=pace_dir)
        self.max_pages = max_pages
        self.settle = settle  # seconds to let a just-created PR or a pushed branch show up
        self._sleep = sleep
        self._clock = clock
        owner, _, repo = upstream.partition("/")
        self._base_path = f"/repos/{seg(owner)}/{seg(repo)}"
        self.login: str | None = None  # the token's own user (GET /user)
        self.listing_ttl = listing_ttl
        self._lock = threading.RLock()
        self._open: dict[int, dict[str, Any]] | None = None  # the open PRs, by number
        self._open_at = 0.0
        self._closed_for: set[tuple[str, str]] = set()  # (head, base) of PRs closed as wrong
        self._created: set[int] = set()  # PRs this client opened (no issue linked yet)
        # base -> (read at, every merged PR above this number listed, those PRs by number)
        self._merged: dict[str, tuple[float, int, dict[int, dict[str, Any]]]] = {}
        self._after_post: dict[int, list[Comment]] = {}  # a post's read-back, listed once
        self._issue_states: dict[int, str] = {}

    @property
    def fork(self) -> str:
        """The fork: as branches.yaml names it, else the token's login's (``GET /user``)."""
        return self._fork or fork_of(self.upstream, self.current_user())

    @property
    def fork_owner(self) -> str:
        return self.fork.partition("/")[0]

    # ------------------------------------------------------------------ helpers
    def _pulls(self, suffix: str = "") -> str:
        return f"{self._base_path}/pulls{suffix}"

    def _pr_url(self, data: dict[str, Any], number: int) -> str:
        return (_text(data.get("html_url")) or _text(data.get("web_url"))
                or f"{self.web_url}/{self.upstream}/pull/{number}")

    def _to_pr(self, data: dict[str, Any]) -> PullRequest:
        number = _number(data)
        head, base = _obj(data, "head"), _obj(data, "base")
        state = _text(data.get("state")).lower()
        if state == "merged" or _text(data.get("merged_at")):
            state = "merged"
        elif state in ("open", "opened", "reopened", "locked", ""):  # locked: open, talk frozen
            state = "open"
        else:
            state = "closed"
        draft = _draft(data)
        title = _text(data.get("title"))
        return PullRequest(
            number=number,
            url=self._pr_url(data, number),
            title=_strip_wip(title) if draft else title,
            body=_body(data),
            head=_text(head.get("ref")) or _text(data.get("source_branch")),
            head_repo=_repo_of(head) or "",
            base=_text(base.get("ref")) or _text(data.get("target_branch")),
            state=state,
            draft=draft,
            author=_author(data),
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

    def _pages(self, path: str, params: dict[str, Any],
               key: Callable[[dict[str, Any]], str] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, page after page until an empty or a repeated page,
        or one shorter than the documented default of 20.

        A page of 20 or more does not end the list: the service may not honour ``per_page``. A page
        that is not a list (an error object or an HTML page answered 200) is an error, never
        the end of the list. ``key`` names an item for telling a repeated page (default: its
        ``id`` or ``number``).
        """
        seen_pages: set[tuple] = set()
        for page in range(1, self.max_pages + 1):
            items = self.client.get(path, {**params, "page": page, "per_page": PER_PAGE})
            if not isinstance(items, list):
                shape = "an object" if isinstance(items, dict) else "text" if items else "nothing"
                raise BackportError(
                    "forge", redact(f"GitCode API GET {self.api_url}{path} page {page} answered "
                                    f"{shape} instead of a list; refusing to decide from a "
                                    "listing cut short whether a PR exists, so run again "
                                    "later."))
            if not items:
                return
            named = key or (lambda i: str(i.get("id", i.get("number"))))
            shown = tuple(named(i) if isinstance(i, dict) else str(i) for i in items)
            if shown in seen_pages:
                return
            seen_pages.add(shown)
            yield from (i for i in items if isinstance(i, dict))
            if len(items) < SMALLEST_PAGE:
                return  # shorter than any page size the service uses: the last page
        raise BackportError("forge", f"GitCode API GET {self.api_url}{path} returned more than "
                                     f"{self.max_pages} pages; refusing to guess whether a PR "
                                     "already exists.")

    def _open_prs(self, *, fresh: bool = False) -> dict[int, dict[str, Any]]:
        """The upstream's open PRs by number (``locked`` ones too: they are not closed), in the
        order they were created, so a PR opened meanwhile cannot shift one past a page
        boundary; kept ``listing_ttl`` seconds and kept current by this client's own creates,
        updates and closes."""
        with self._lock:
            now = self._clock()
            if fresh or self._open is None or now - self._open_at > self.listing_ttl:
                listing: dict[int, dict[str, Any]] = {}
                for state in OPEN_STATES:
                    for item in self._pages(self._pulls(), {"state": state, **STABLE_ORDER}):
                        try:
                            listing[_number(item)] = item
                        except (TypeError, ValueError):
                            continue
                self._open, self._open_at = listing, now
            return self._open

    def _remember(self, data: dict[str, Any]) -> None:
        """Keep the listing current with what was just read or written of one PR."""
        with self._lock:
            if self._open is None:
                return
            try:
                number = _number(data)
            except (TypeError, ValueError):
                return
            if self._to_pr(data).state == "open":
                self._open[number] = {**self._open.get(number, {}), **data}
            else:
                self._open.pop(number, None)

    # ------------------------------------------------------------------ protocol
    def missing(self) -> list[str]:
        if self.has_token:
            return []
        return [f"no GitCode token for {self.api_url}: set GITCODE_TOKEN (or BACKPORT_TOKEN) to "
                "a personal access token, or store one with git's credential helper"]

    def preflight(self) -> None:
        if not self.has_token:
            raise BackportError("auth", f"No GitCode token for {self.api_url}; set GITCODE_TOKEN "
                                        "(or BACKPORT_TOKEN) to a personal access token.")
        self.current_user()
        fork_role = "fork in branches.yaml" if self._fork else "fork that follows the token's login"
        for role, repo, code in (("upstream in branches.yaml", self.upstream, "upstream-unreachable"),
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
        """The token's own login (``GET /user``, read once)."""
        with self._lock:
            if self.login is not None:
                return self.login
            if not self.has_token:
                raise BackportError("auth", f"No GitCode token for {self.api_url}, so nobody to "
                                            "ask GET /user about; set GITCODE_TOKEN (or "
                                            "BACKPORT_TOKEN) to a personal access token.")
            try:
                data = self.client.get("/user")
            except ApiError as exc:
                if exc.status == 401:
                    raise BackportError(
                        "auth", f"GitCode rejected the token (401 Unauthorized) at GET "
                                f"{self.api_url}/user; set GITCODE_TOKEN to a valid personal "
                                "access token.") from None
                raise
            login = data.get("login") if isinstance(data, dict) else None
            if not (isinstance(login, str) and login):
                if not self._fork:
                    raise BackportError("forge", f"GET {self.api_url}/user named no login, so "
                                                 "the fork cannot follow the token; set fork: "
                                                 "in branches.yaml")
                login = self._fork.partition("/")[0]
            self.login = login
            return self.login

    def push_credentials(self, url: str) -> dict[str, str] | None:
        """Environment for ``git push`` over HTTPS: the token via askpass, never in argv or URL,
        with the token's own login as the user name (the fork may belong to an organisation)."""
        if self._token and url.startswith(("https://", "http://")):
            return askpass_env(self._token, self.current_user())
        return None

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        return self._find(head, base, fresh=False)

    def later_prs(self, number: int, base: str) -> list[PullRequest]:
        """The open PRs from the kept listing, and the merged ones into ``base`` asked newest
        first (``base``, ``sort`` and ``direction`` only narrow the reading: every item is
        checked here). The merged listing ends at the first PR numbered ``number`` or below
        once the items so far came strictly newest first; where they did not, every page is
        read (a service that ignores the order is read whole)."""
        found = {n: item for n, item in self._open_prs().items() if n > number}
        found.update((n, item) for n, item in self._merged_into(base, number).items()
                     if n > number)
        prs = (self._to_pr(item) for _, item in sorted(found.items()))
        return [pr for pr in prs if pr.base == base and pr.state in ("open", "merged")]

    def _merged_into(self, base: str, number: int) -> dict[int, dict[str, Any]]:
        """The merged PRs into ``base`` numbered above ``number`` (and maybe more), by number.
        One reading serves every later ask of the run for ``base`` down to the number it
        reached, while it is younger than the listing's ``listing_ttl`` (as the open half)."""
        with self._lock:
            kept = self._merged.get(base)
            if kept is not None and kept[1] <= number and \
                    self._clock() - kept[0] <= self.listing_ttl:
                return kept[2]
        read_at = self._clock()
        found: dict[int, dict[str, Any]] = {}
        previous: int | None = None
        ordered, reached = True, 0  # reached: every merged PR above it was listed
        newest_first = {"state": "merged", "base": base, "sort": "created", "direction": "desc"}
        for item in self._pages(self._pulls(), newest_first):
            try:
                current = _number(item)
            except (TypeError, ValueError):
                continue
            ordered = ordered and (previous is None or current < previous)
            if ordered and previous is not None and current <= number:
                reached = number
                break
            previous = current
            found[current] = item
        with self._lock:
            self._merged[base] = (read_at, reached, found)
        return found

    def _find(self, head: str, base: str, *, fresh: bool) -> PullRequest | None:
        return self._match(self._open_prs(fresh=fresh).values(), head, base)

    def _opened_since(self, head: str, base: str) -> PullRequest | None:
        """Right before a create: the open PRs into ``base`` read now (the documented ``base``
        filter only narrows the reading; every item is matched here, so a service that ignores
        it lists them all), kept in the listing, and the listing's locked PRs (a PR opened
        since the listing is open; one locked since was open, and listed, then). Without a
        listing kept, the whole listing is read."""
        with self._lock:
            listed = self._open is not None and self._clock() - self._open_at <= self.listing_ttl
        if not listed:
            return self._find(head, base, fresh=True)
        fresh: dict[int, dict[str, Any]] = {}
        for item in self._pages(self._pulls(), {"state": "open", "base": base, **STABLE_ORDER}):
            try:
                fresh[_number(item)] = item
            except (TypeError, ValueError):
                continue
        with self._lock:
            kept = dict(self._open or {})
            if self._open is not None:
                for number, item in fresh.items():
                    self._open[number] = {**self._open.get(number, {}), **item}
        locked = [item for item in kept.values()
                  if _text(item.get("state")).lower() == "locked"]
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

    def get_source_pr(self, number: int) -> SourcePrInfo:
        """``GET /pulls/{n}`` and ``GET /pulls/{n}/issues`` (pulls.rst); ``merge_commit_sha``
        only when the answer carries one (the single-PR example shows none)."""
        data = self._get_pr_data(number)
        pr = self._to_pr(data)
        head = _obj(data, "head")
        merge_sha = _text(data.get("merge_commit_sha")).strip()
        return SourcePrInfo(
            number=pr.number, state=pr.state, title=_strip_wip(pr.title), body=pr.body,
            base=pr.base, head=pr.head, head_sha=_text(head.get("sha")).strip(),
            merge_commit_sha=merge_sha if len(merge_sha) == 40 else "",
            author=_text(_obj(data, "user").get("login")),
            issues=tuple(self.linked_issues(number)),
            merged_at=_text(data.get("merged_at")).strip())

    def pr_files(self, number: int) -> list[PrFile]:
        """``GET /pulls/{n}/files`` (pulls.rst §5): one item per file, ``filename`` and a
        ``patch`` object with ``old_path``, ``new_path``, ``new_file``, ``renamed_file``,
        ``deleted_file`` (booleans in the example, integers in the schema). No paging is
        documented; pages are still followed, as for every list, in case the service pages."""
        files: dict[PrFile, None] = {}
        for item in self._pages(self._pulls(f"/{seg(number)}/files"), {},
                                key=lambda i: _text(i.get("filename"))):
            found = pr_file(item)
            if found is not None:
                files.setdefault(found)
        return list(files)

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
            raise BackportError("forge", f"GitCode API GET {self.api_url}{self._pulls(f'/{number}')} "
                                         "did not return a JSON object.")
        self._remember(data)
        return data

    def list_prs(self, state: str = "open", *, fresh: bool = False) -> list[PullRequest]:
        if state == "open":
            return [self._to_pr(item) for item in self._open_prs(fresh=fresh).values()]
        return [self._to_pr(item) for item in self._pages(self._pulls(),
                                                          {"state": state, **STABLE_ORDER})]

    def create_pr(self, head: str, base: str, title: str, body: str, *,
                  draft: bool = False, head_sha: str | None = None,
                  close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        """Open the PR as one transaction: create → read back → correct.

        1. **create**, unless another run opened it meanwhile: POST it (`_post_pr`; after a
           failure, the PR it may have opened is looked for first); ``on_number`` hears the
           new PR's number at once;
        2. **read back** until GitCode shows it (`_read_created`);
        3. **correct** (`_correct`): a PR opened from another head is closed (once per
           branch) and the create flags GitCode did not take are set through an update.
        """
        ask = _Ask(head, base, title, body, draft, head_sha, close_related_issue)
        with _create_lock((self.api_url, self.upstream, head, base)):
            existing = self._opened_since(head, base)  # another run may have opened it
            if existing is not None:
                return existing
            made = self._post_pr(ask)
            if isinstance(made, PullRequest):  # a failed create's PR, found after all
                return made
            if on_number is not None:
                on_number(made)
            full = self._read_created(made, ask)
            return self._correct(made, full, ask)

    def verify_pr(self, number: int, head: str, base: str, *,
                  head_sha: str | None = None) -> PullRequest:
        """Judge a PR this tool opened but could not read back then: steps 2 and 3 of
        `create_pr`, with no create flags to correct."""
        ask = _Ask(head, base, "", "", None, head_sha, None)
        full = self._read_created(number, ask)
        return self._correct(number, full, ask)

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

    def _fork_branch_shown(self, head: str, head_sha: str | None) -> bool:
        """After a refused create: whether GitCode shows the fork branch (at ``head_sha``), after
        the settle wait when it does not at once; raises the sentence when it never does."""
        sha: str | None = None
        for attempt in range(2):  # a branch pushed a moment ago may take a while to show
            if attempt:
                self._sleep(self.settle)
            sha = self._branch_sha(self.fork, head)
            if sha is not None and (not head_sha or not sha or sha == head_sha):
                return attempt > 0
        if sha is None:
            raise BackportError(
                "forge", f"The fork branch {self.fork}:{head} does not exist on GitCode (GET "
                         f"{self.api_url}/repos/{self.fork}/branches/{head} found nothing), so no "
                         "PR was opened; push it to the fork first.")
        if head_sha and sha != head_sha:
            raise BackportError(
                "forge", f"The fork branch {self.fork}:{head} is at {sha[:9]} on GitCode, not at "
                         f"the {head_sha[:9]} just pushed, so no PR was opened; check who pushed "
                         "to the fork, then run again.")
        return False

    def _post_pr(self, ask: _Ask) -> PullRequest | int:
        """Step 1 of `create_pr`: POST the PR; the new PR's number, or the PR a failed create
        opened after all. Resent once after a lost reply or a 5xx, and after a refusal for a
        fork branch GitCode showed only later; any other refusal is one sentence."""
        head, base, head_sha = ask.head, ask.base, ask.head_sha
        title, body, draft, close_related_issue = (ask.title, ask.body, ask.draft,
                                                   ask.close_related_issue)
        head_form = head if _norm_repo(self.fork) == _norm_repo(self.upstream) else f"{self.fork}:{head}"
        payload: dict[str, Any] = {"title": title, "head": head_form, "base": base, "body": body}
        if draft:
            payload["draft"] = True
        if close_related_issue is not None:
            payload["close_related_issue"] = close_related_issue
        resends = 1  # after a lost reply or 5xx, and after a branch that showed only later
        while True:
            try:
                answer = self.client.request("POST", self._pulls(), json=payload, retry=False)
            except ApiTransportError as exc:
                found = self._look_up_after_failure(head, base, exc.message)
                if found is not None:
                    return found
                if resends <= 0:
                    raise
                resends -= 1
                continue
            except ApiError as exc:
                if exc.code == "auth":
                    raise
                # Whatever the refusal, the PR may exist (a duplicate, a create that went
                # through): look before sending anything else.
                found = self._look_up_after_failure(
                    head, base, exc.message,
                    settle=_duplicate(exc.server_message) or exc.status in (409, 429)
                    or exc.status >= 500)
                if found is not None:
                    return found
                if _duplicate(exc.server_message):
                    raise BackportError(
                        "forge", redact(f"GitCode says a PR from {self.fork}:{head} into "
                                        f"{self.upstream}:{base} already exists "
                                        f"({exc.server_message}), but no open PR from that fork "
                                        "branch is listed; look at the upstream's PRs, then run "
                                        "again."), details={"status": exc.status}) from None
                if exc.status >= 500 and resends > 0:
                    resends -= 1
                    continue
                if 400 <= exc.status < 500 and resends > 0 and \
                        self._fork_branch_shown(head, head_sha):
                    resends -= 1
                    continue
                raise BackportError(
                    "forge", redact(f"GitCode did not open a PR from {self.fork}:{head} into "
                                    f"{self.upstream}:{base}: POST {self.api_url}{self._pulls()} "
                                    f"with head={head_form!r} answered {exc.status}: "
                                    f"{exc.server_message}."),
                    details={"status": exc.status}) from None
            return self._number_of(answer.data, ask)

    def _look_up_after_failure(self, head: str, base: str, why: str, *,
                               settle: bool = True) -> PullRequest | None:
        """Look for the PR a failed create may have opened: fresh listings, ``LOOKUPS`` of them
        ``settle`` seconds apart (one when the refusal says nothing was made)."""
        log.warning("%s; checking whether the PR exists anyway", why.rstrip("."))
        for attempt in range(LOOKUPS if settle else 1):
            if attempt:
                self._sleep(self.settle * attempt)
            found = self._find(head, base, fresh=True)
            if found is not None:
                return found
        return None

    def _number_of(self, data: Any, ask: _Ask) -> PullRequest | int:
        """The number a create answered; where it answered none, the PR listed since."""
        head, base = ask.head, ask.base
        if isinstance(data, dict):
            try:
                return _number(data)
            except (TypeError, ValueError):
                pass
        found = self._look_up_after_failure(
            head, base, f"GitCode accepted the PR from {self.fork}:{head} into "
                        f"{self.upstream}:{base} but returned no PR number")
        if found is not None:
            return found
        raise BackportError("forge", f"GitCode accepted the PR from {self.fork}:{head} into "
                                     f"{self.upstream}:{base} but returned no PR number, and "
                                     "no such open PR is listed.")

    def _read_created(self, number: int, ask: _Ask) -> dict[str, Any]:
        """Step 2 of `create_pr`: the created PR as GitCode shows it: a 404, an error or a reply that is not a PR is
        "not yet" (replication lag) and read again after the settle wait; a head that looks
        wrong or a SHA that differs is read once more before it is judged."""
        full: dict[str, Any] | None = None
        why = ""
        good = 0
        for attempt in range(CREATED_READS):
            if attempt:
                self._sleep(self.settle * min(attempt, 3))
            try:
                data = self._get_pr_data(number)
            except BackportError as exc:
                if exc.code == "auth":
                    raise
                why = exc.message.rstrip(".")
                continue
            full, good = data, good + 1
            sha = _text(_obj(data, "head").get("sha"))
            suspect = (self._to_pr(data).head != ask.head or self._from_fork(data) is False
                       or bool(ask.head_sha and sha and sha != ask.head_sha))
            if not suspect or good >= READS_BEFORE_JUDGING:
                break
        if full is None:
            url = f"{self.web_url}/{self.upstream}/pull/{number}"
            raise BackportError(
                "forge", redact(f"GitCode opened PR !{number} ({url}) from {self.fork}:{ask.head} "
                                f"but could not show it in {CREATED_READS} reads ({why}); it is "
                                "kept and judged on the next run."),
                details={"number": number, "url": url, "unverified": True})
        return full

    def _correct(self, number: int, full: dict[str, Any], ask: _Ask) -> PullRequest:
        """Step 3 of `create_pr`: a PR whose head repository and branch are both shown and are
        not the fork branch goes to `_close_wrong` (which raises); any other is kept, a head it
        does not show taken as the fork branch. Then ``draft`` and ``close_related_issue`` are
        set through the update path where the PR does not show them as sent (a create may
        ignore JSON booleans)."""
        head = ask.head
        pr = self._to_pr(full)
        with self._lock:
            self._created.add(number)
            if self._open is not None and pr.state == "open":
                self._open[number] = full
        repo = _repo_of(_obj(full, "head"))
        if bool(pr.head) and repo is not None and (
                pr.head != head or _norm_repo(repo) != _norm_repo(self.fork)):
            self._close_wrong(number, pr, full, ask)
        if not pr.head or repo is None:
            log.warning("GitCode PR !%s does not show its head %s; assuming %s:%s, so it is "
                        "kept", number, "branch" if not pr.head else "repository",
                        self.fork, head)
            pr = dataclasses.replace(pr, head=pr.head or head, head_repo=pr.head_repo or self.fork)
        sha = _text(_obj(full, "head").get("sha"))
        if ask.head_sha and sha and sha != ask.head_sha:
            log.warning("GitCode PR !%s still shows head %s, not the %s pushed; its head "
                        "SHA may lag, so the PR is kept", number, sha[:9], ask.head_sha[:9])
        off = [] if ask.draft is None or _field(full, "draft") == ask.draft else ["draft"]
        if ask.close_related_issue is not None and \
                _field(full, "close_related_issue") != ask.close_related_issue:
            off.append("close_related_issue")
        if not off:
            return pr
        log.warning("GitCode did not take %s of the new PR !%s; setting it through an update",
                    ", ".join(off), pr.number)
        fixed = self.update_pr(pr.number, title=ask.title, body=ask.body, draft=ask.draft,
                               close_related_issue=ask.close_related_issue)
        return dataclasses.replace(fixed, head=pr.head, head_repo=pr.head_repo)

    def _close_wrong(self, number: int, pr: PullRequest, full: dict[str, Any],
                     ask: _Ask) -> NoReturn:
        """A PR GitCode opened from another head: closed once per branch where backport may
        (its base the one asked for, its author the token's user), else left open; raises the
        sentence either way."""
        head, base = ask.head, ask.base
        source = f"{pr.head_repo}:{pr.head}"
        if _norm_repo(pr.head_repo) == _norm_repo(self.upstream):
            source = f"the upstream branch {source}"
        wanted = f"{self.fork}:{head}"
        author = _author(full)
        if pr.base != base or not author or author.casefold() != self.current_user().casefold():
            reason = (f"its base is {pr.base or 'not shown'}, not {base}" if pr.base != base
                      else f"its author is {author or 'not shown'}, not {self.current_user()}")
            raise BackportError(
                "forge", redact(f"GitCode PR !{number} ({pr.url}) shows its head as {source}, "
                                f"not the fork branch {wanted}, but {reason}, so backport left "
                                "it open: look at it, and close it by hand if it is wrong."),
                details={"number": number, "url": pr.url, "closed": False})
        with self._lock:
            again = (head, base) in self._closed_for
            self._closed_for.add((head, base))
        if again:
            raise BackportError(
                "forge", redact(f"GitCode again opened a PR from {source} instead of the fork "
                                f"branch {wanted} (PR !{number}, {pr.url}); backport closes such a "
                                "PR only once per branch, so it is left open: close it by hand."),
                details={"number": number, "url": pr.url, "closed": False})
        closed = self._close(number, pr)
        tail = ("backport closed it at once, so no wrong PR stays open" if closed is None else
                f"closing it failed ({closed}), so close it by hand")
        raise BackportError(
            "forge", redact(f"GitCode opened PR !{number} ({pr.url}) from {source} instead of "
                            f"the fork branch {wanted}; {tail}."),
            details={"number": number, "url": pr.url, "closed": closed is None})

    def _close(self, number: int, pr: PullRequest) -> str | None:
        """Close a PR (``PATCH state=closed``, form-encoded if JSON did not take); None when
        closed, else why not."""
        fields = {"title": pr.title, "body": pr.body, "state": "closed"}
        try:
            self.client.request("PATCH", self._pulls(f"/{seg(number)}"), json=fields)
            if self.get_pr(number).state != "open":
                return None
            self.client.request("PATCH", self._pulls(f"/{seg(number)}"), data=fields)
            if self.get_pr(number).state != "open":
                return None
            return "GitCode still shows it open"
        except BackportError as exc:
            return exc.message.rstrip(".")

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        """PATCH, then check every field against the answer, or a read-back where the answer
        does not show it and it may have changed; fields not taken are sent once more
        form-encoded. The PR returned names in ``not_taken`` what still did not take."""
        fields: dict[str, Any] = {"title": title, "body": body}
        if draft is not None:
            fields["draft"] = draft
        if close_related_issue is not None:
            fields["close_related_issue"] = close_related_issue
        path = self._pulls(f"/{seg(number)}")
        with self._lock:
            known = dict((self._open or {}).get(number, {}))
        answer = self.client.request("PATCH", path, json=fields).data
        data, not_taken = self._check_update(number, fields, answer, known)
        if not_taken:
            log.warning("GitCode did not take %s of PR !%s sent as JSON; sending it form-encoded",
                        ", ".join(not_taken), number)
            answer = self.client.request("PATCH", path, data=_form(fields)).data
            data, not_taken = self._check_update(number, fields, answer, data)
        if "draft" in not_taken and draft is not None:
            data, not_taken = self._draft_by_title(number, fields, draft, data, not_taken)
        with self._lock:
            if self._open is not None:
                self._remember(data)
        return dataclasses.replace(self._to_pr(data), not_taken=tuple(not_taken))

    def _draft_by_title(self, number: int, fields: dict[str, Any], draft: bool,
                        data: dict[str, Any], not_taken: list[str]) -> tuple[dict[str, Any],
                                                                               list[str]]:
        """Set draft through the title where the service derives draft from it and ignores
        the ``draft`` field: ``[WIP] `` before the title for a draft, the plain title else."""
        title = _strip_wip(str(fields["title"]))
        sent = {"title": f"{WIP_PREFIXES[0]}{title}" if draft else title, "body": fields["body"]}
        log.warning("GitCode did not take draft=%s of PR !%s; setting it through the title",
                    draft, number)
        answer = self.client.request("PATCH", self._pulls(f"/{seg(number)}"), json=sent).data
        data, _ = self._check_update(number, {**sent, "draft": draft}, answer, {})
        still = [key for key in not_taken
                 if key != "draft" and _field(data, key) != _wanted(key, fields[key])]
        if _field(data, "draft") != draft:
            still.append("draft")
        return data, still

    def _check_update(self, number: int, fields: dict[str, Any], answer: Any,
                      known: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The PR as it now is and the fields that did not take: the answer shows title and
        body; a field it does not show is read back unless it was already as sent, and draft
        is always read back unless the answer shows it (a service may derive it from the
        title sent)."""
        shown = answer if isinstance(answer, dict) else {}
        need_read = not known or any(
            _field(shown, key) is None and (key == "draft"
                                            or _field(known, key) != _wanted(key, value))
            for key, value in fields.items())
        data = self._get_pr_data(number) if need_read else {**known, **shown}
        for key, value in fields.items():
            if key in ("draft", "close_related_issue") and not need_read:
                data[key] = value if _field(shown, key) is None else _field(shown, key)
        not_taken = [key for key, value in fields.items()
                     if _field(data, key) != _wanted(key, value)]
        return data, not_taken

    def issue_state(self, issue: int) -> str:
        """``GET /repos/{o}/{r}/issues/{n}``: its ``state``, ``""`` when it cannot be read; read
        once per client (a run), whichever branch asks."""
        with self._lock:
            if issue in self._issue_states:
                return self._issue_states[issue]
        state = self._read_issue_state(issue)
        with self._lock:
            self._issue_states[issue] = state
        return state

    def _read_issue_state(self, issue: int) -> str:
        try:
            data = self.client.get(f"{self._base_path}/issues/{seg(issue)}")
        except ApiError as exc:
            log.warning("GitCode issue #%s could not be read: %s", issue, exc.message)
            return ""
        state = _text(data.get("state")).lower() if isinstance(data, dict) else ""
        return "open" if state in ("open", "opened", "reopened", "progressing") else state

    def linked_issues(self, number: int) -> list[int]:
        return _issue_numbers(list(self._pages(self._pulls(f"/{seg(number)}/issues"), {})))

    def link_issues(self, number: int, issues: Sequence[int]) -> None:
        """Link every one of ``issues`` not linked yet, in one POST (the linked ones are not
        read for a PR this client just opened); read back only when the answer does not list
        them all or never came. A 5xx, 429 or lost reply is tried again, up to
        ``LINK_ATTEMPTS`` times a settle wait apart; only a 403 or 404 is the service refusing
        the link (:func:`~backport.forge.base.is_refusal`)."""
        wanted = [int(i) for i in dict.fromkeys(issues)]
        if not wanted:
            return
        with self._lock:
            new = number in self._created
        if not new:
            wanted = _not_in(wanted, self.linked_issues(number))
            if not wanted:
                return
        path = self._pulls(f"/{seg(number)}/issues")
        for attempt in range(1, LINK_ATTEMPTS + 1):
            try:
                answer = self.client.request("POST", path, json=wanted, retry=False).data
            except (ApiTransportError, ApiError) as exc:
                transient = not isinstance(exc, ApiError) or exc.status >= 500 \
                    or exc.status == 429
                if not transient or attempt == LINK_ATTEMPTS:
                    raise
                self._sleep(self.settle * attempt)
                wanted = _not_in(wanted, self.linked_issues(number))
                if not wanted:
                    return
                continue
            missing = _not_in(wanted, _issue_numbers(answer))
            if not missing or not _not_in(missing, self.linked_issues(number)):
                return
            said = ", ".join(f"#{i}" for i in missing)
            raise BackportError("forge", f"GitCode answered the link of issue {said} to PR "
                                         f"!{number} but does not list it as linked.")

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

    # ------------------------------------------------------------------ comments
    def _comment(self, data: dict[str, Any]) -> Comment:
        """A comment item: ``note_id`` (an integer, what ``PATCH …/pulls/comments/{id}``
        takes) where the item has one, else ``id``."""
        ident = data.get("note_id") if data.get("note_id") not in (None, "") else data.get("id")
        return Comment(id=str(ident), body=_text(data.get("body")),
                       author=_text(_obj(data, "user").get("login")),
                       created_at=_text(data.get("created_at")))

    def list_comments(self, number: int) -> list[Comment]:
        """``GET …/pulls/{n}/comments``, every page (pulls.rst §6); sorted oldest first by
        ``created_at`` (the order of the answer is not documented). Right after a post (no
        other comment write between), the post's own read-back is the answer."""
        with self._lock:
            listed = self._after_post.pop(number, None)
        if listed is not None:
            return listed
        items = [self._comment(item)
                 for item in self._pages(self._pulls(f"/{seg(number)}/comments"), {})]
        return sorted(items, key=lambda c: (c.created_at, int(c.id) if c.id.isdigit() else 0))

    def post_comment(self, number: int, body: str) -> Comment:
        """``POST …/pulls/{n}/comments`` (never sent twice), then read back from the list."""
        answer = self.client.request("POST", self._pulls(f"/{seg(number)}/comments"),
                                     json={"body": body}, retry=False).data
        posted = self._comment(answer) if isinstance(answer, dict) else None
        listed = self.list_comments(number)
        with self._lock:  # read after the post: it serves the next listing of this PR too
            self._after_post[number] = listed
        for comment in listed:
            if posted is not None and comment.id == posted.id:
                return comment
        if posted is None:
            raise BackportError("forge", f"GitCode accepted a comment on PR !{number} of "
                                         f"{self.upstream} but did not say which one it made.")
        return posted

    def _comment_path(self, comment_id: str) -> str:
        return self._pulls(f"/comments/{seg(comment_id)}")

    def edit_comment(self, number: int, comment_id: str, body: str) -> Comment:
        """``PATCH …/pulls/comments/{id}`` (pulls.rst §26: its answer is ``{}``), checked by
        reading the PR's comments; sent once more form-encoded (as documented) when the JSON
        body did not take."""
        with self._lock:
            self._after_post.pop(number, None)
        path = self._comment_path(comment_id)
        for attempt in range(2):
            if attempt:
                self.client.request("PATCH", path, data={"body": body})
            else:
                self.client.request("PATCH", path, json={"body": body})
            shown = next((c for c in self.list_comments(number) if c.id == comment_id), None)
            if shown is None:
                raise BackportError("forge", f"GitCode no longer lists comment {comment_id} on "
                                             f"PR !{number} of {self.upstream}.")
            if shown.body.strip() == body.strip():
                return shown
        raise BackportError("forge", f"GitCode answered the edit of comment {comment_id} on PR "
                                     f"!{number} of {self.upstream} but still shows the old text.")

    def delete_comment(self, number: int, comment_id: str) -> None:
        """``DELETE …/pulls/comments/{id}`` (pulls.rst §27)."""
        with self._lock:
            self._after_post.pop(number, None)
        self.client.request("DELETE", self._comment_path(comment_id))

    def permission(self, login: str) -> str:
        """``GET /repos/{o}/{r}/collaborators/{login}/permission`` (member.rst §5); ``none``
        when GitCode knows no such collaborator."""
        try:
            data = self.client.get(f"{self._base_path}/collaborators/{seg(login)}/permission")
        except ApiError as exc:
            if exc.not_found:
                return "none"
            raise
        value = data.get("permission") if isinstance(data, dict) else None
        return value.strip().lower() if isinstance(value, str) and value.strip() else "none"

    def collaborators(self) -> dict[str, bool]:
        """``GET /repos/{o}/{r}/collaborators`` (member.rst §3), every page: each member's
        ``login`` (the listing names it ``username``) and whether ``permissions.admin`` or
        ``.push`` is true, or its ``permission`` is a writer's."""
        found: dict[str, bool] = {}
        for item in self._pages(f"{self._base_path}/collaborators", {},
                                key=lambda i: str(i.get("id", i.get("username")))):
            login = _text(item.get("login")) or _text(item.get("username"))
            if not login.strip():
                continue
            flags = _obj(item, "permissions")
            named = _text(item.get("permission")).strip().lower()
            found[login.strip()] = (flags.get("admin") is True or flags.get("push") is True
                                    or named in WRITE_PERMISSIONS)
        return found
