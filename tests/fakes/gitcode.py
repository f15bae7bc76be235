"""A stateful fake GitCode REST v5 server for tests, as strict as GitCode's documentation.

Every behaviour is listed with its source in ``docs/gitcode.md``. Reproduced: ``PRIVATE-TOKEN`` /
Bearer auth with ``401 {"message": "401 Unauthorized"}``; repository not found as 404 JSON
(``GET /repos/o/r``) or 400 plain text (everything below it); list default ``state=all``,
``per_page`` default 20 / max 100, ``head`` filter ignored, ``head.label`` the bare branch, list
items with ``head.repo.full_path``; single-PR answers with ``head.repo`` as ``full_name`` /
``namespace.path`` / ``path`` (no ``full_path``) and the head branch's live ``sha``; a create
answer with ``number`` and ``html_url`` but no ``iid`` and no ``head``/``base``; minimal PATCH
answer (title and body must come together); linked issues paged (20 per page by default) with
numbers as strings; ``merged_at: ""``.

Stricter than a kind stand-in: only ``owner/repo:branch`` heads are accepted by default, and the
legacy forms (``owner:branch``, with or without ``fork_path``) resolve to the *upstream* branch of
the same name as clients reported (a PR with 0 commits), else 403/404; a login that is not a
member of the upstream gets 403 on labels, assignees, reviewers and testers; a duplicate create is
refused in Chinese (``已存在``); ``per_minute`` answers 429 *without* ``Retry-After``; a draft's
title gets a ``[WIP] `` prefix (with ``draft_from_title``, a PATCH of the title alone sets draft
from that prefix); merging closes the linked issues unless ``close_related_issue``
was false (the default follows ``close_related_issue_default``, the repository setting).

Usage::

    server = FakeGitCode(tokens={"tok"}, upstream="Ascend/pytorch", fork="me/pytorch")
    server.start(); forge = GitCodeForge(server.url, ...); ...; server.stop()

Fault injection: ``server.add_fault("POST", r"/pulls$", Fault(status=502))`` queues faults per
(method, path regex); each matching request consumes one. See :class:`Fault`. A reply lost after
the PR was made is ``Fault(drop=True, after=True)``; a 5xx after it, ``Fault(status=502,
after=True)``.

Switches for what the documentation leaves open (all off by default): ``head_sha_lag`` (the first
reads of a new PR show the base's SHA as ``head.sha``), ``honour_per_page=False`` (pages of 20
whatever is asked), ``json_patch_ignores`` / ``form_patch_ignores`` (PATCH fields answered 200 but
not taken, per encoding), ``list_lag`` (a new PR is left out of the next list reads),
``refuse_duplicates=False`` (a second create opens a second PR), ``oldest_first`` (lists
oldest first whatever order is asked), ``per_minute`` with
``rate_window`` (429 past N requests in a sliding window; ``rate_limited`` counts them).
``counts()`` gives the requests per endpoint.

Round three (issue 29; ``docs/gitcode.md`` lists each): ``draft_by_title`` (``draft`` ignored on
PATCH, derived from a ``[WIP]`` title), ``create_ignores_booleans`` (JSON booleans ignored on
create), ``bad_page`` / ``bad_page_body`` (a list page answered 200 with an error object or an
HTML page), ``unstable_order`` (the order shifts between pages unless ``sort=created&direction=
asc``), PRs in state ``locked`` (listed only for ``state=locked``/``all``), ``read_lag`` (the
first reads of a new PR answer 404), ``burst()`` (a 5xx burst), ``omit_head`` (head fields left
out), ``wrong_base`` and ``author`` (what a create records), ``clock_offset`` (the ``Date``
header of a server whose clock is off; ``server_date()`` for a ``Retry-After`` date), and
``GET /repos/o/r/issues/{n}`` with ``closed_issues``.

Issue 35: ``GET /pulls/{n}/files`` lists ``FakePR.files`` in the documented item shape (no
paging is documented, so every file comes in one answer); list and single-PR items carry the
author's ``user.login``.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

API_PREFIX = "/api/v5"
HEAD_FORMS = ("repo", "fork_path", "owner")  # owner/repo:branch | owner:branch+fork_path | owner:branch
DUPLICATE_MESSAGE = "合并请求已存在：同一源分支与目标分支之间已有打开的合并请求 !{number}"
WIP = "[WIP] "
BARRIER_WAIT = 25.0
_NUMBER = re.compile(r"/\d+(?=/|$)")


@dataclass
class Fault:
    """One injected misbehaviour.

    ``status``: answer this status (with ``body``/``headers``) instead of handling the request.
    ``drop``: close the connection without any reply.
    ``after``: handle the request first (the state changes!), then apply ``status``/``drop``.
    ``stall``: handle the request, sleep this many seconds, then reply normally (or per the above).
    ``barrier``: wait until the other requests holding this barrier arrived too (at most
    ``BARRIER_WAIT`` seconds, less than a client's timeout), then go on as the rest says: two
    clients' requests are handled side by side, as two runners finishing at once.
    """

    status: int | None = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    after: bool = False
    stall: float = 0.0
    barrier: threading.Barrier | None = None


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str  # decoded path below /api/v5
    raw_path: str  # the request target exactly as sent (path and query)
    query: dict[str, str]
    body: Any
    auth: str | None  # "private-token" | "bearer" | "query" | None
    status: int | None = None  # None when the connection was dropped


@dataclass
class FakePR:
    number: int
    id: int
    title: str
    body: str
    head_repo: str
    head_ref: str
    base_ref: str
    author: str
    state: str = "open"  # open | closed | merged
    draft: bool = False
    head_sha: str = ""
    close_related_issue: bool | None = None  # None: the repository setting decides
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    reviewers: list[str] = field(default_factory=list)
    testers: list[str] = field(default_factory=list)
    issues: list[int] = field(default_factory=list)
    comments: list[dict[str, Any]] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    merged_at: str = ""
    merge_commit_sha: str = ""  # shown by GET /pulls/{n} only when set (its example has none)
    # (old path, new path) of each file the PR changes, as ``GET /pulls/{n}/files`` lists it:
    # None for the side of a new or a deleted file (:func:`git_files` reads them from git).
    files: list[tuple[str | None, str | None]] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def synthetic_sha(repo: str, branch: str) -> str:
    """A stable commit id for a branch that only exists in the fake's ``branches`` sets."""
    return hashlib.sha1(f"{repo}:{branch}".encode()).hexdigest()


def git_branch_checker(repos: dict[str, Path]) -> Callable[[str, str], str | None]:
    """A ``branch_exists(repo, branch)`` that reads the SHA from real (bare) git repositories.

    Read from git's ref files as git writes them (a loose ref, else ``packed-refs``), not by a
    ``git rev-parse`` per request: the server answers many requests per run."""

    def exists(repo: str, branch: str) -> str | None:
        path = repos.get(repo)
        return None if path is None else read_ref(path, f"refs/heads/{branch}")

    return exists


def read_ref(git_dir: Path, ref: str) -> str | None:
    """The commit id ``ref`` names in ``git_dir`` (files ref storage), or None when absent."""
    try:
        loose = (Path(git_dir) / ref).read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        loose = ""
    if loose.startswith("ref: "):
        return read_ref(git_dir, loose[len("ref: "):])
    if loose:
        return loose
    try:
        packed = (Path(git_dir) / "packed-refs").read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and not line.startswith(("#", "^")):
            return sha
    return None


def git_files(git_dir: Path, old: str, new: str) -> list[tuple[str | None, str | None]]:
    """The files between commits ``old`` and ``new`` of a real repository as GitCode lists a
    PR's (renames found as git finds them): ``FakePR.files``."""
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "diff", "-M", "--name-status", "-z", old, new, "--"],
        capture_output=True, text=True, check=True, env={**os.environ, "LANG": "C"})
    fields = [f for f in proc.stdout.split("\0") if f]
    files: list[tuple[str | None, str | None]] = []
    while fields:
        status = fields.pop(0)
        if status[0] in "RC":
            files.append((fields.pop(0), fields.pop(0)))
        elif status[0] == "A":
            files.append((None, fields.pop(0)))
        elif status[0] == "D":
            files.append((fields.pop(0), None))
        else:
            path = fields.pop(0)
            files.append((path, path))
    return files


def _file_json(old: str | None, new: str | None, sha: str) -> dict[str, Any]:
    """One item of ``GET /pulls/{n}/files`` (pulls.rst §5): numbers as strings, ``status``
    null, the paths and kind in ``patch`` (a deleted file keeps its old path as
    ``new_path``, as GitLab-shaped diffs do)."""
    name = new or old or ""
    return {"sha": sha, "filename": name, "status": None, "additions": "1", "deletions": "0",
            "blob_url": f"https://raw.gitcode.com/blob/{sha}/{name}",
            "raw_url": f"https://raw.gitcode.com/raw/{sha}/{name}",
            "patch": {"diff": "@@ -1 +1 @@\n", "new_path": name, "old_path": old or name,
                      "a_mode": "100644", "b_mode": "100644", "new_file": old is None,
                      "renamed_file": old is not None and new is not None and old != new,
                      "deleted_file": new is None, "too_large": False}}


class _Reply(Exception):
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


class FakeGitCode:
    """The fake server; state is public and guarded by ``lock``."""

    def __init__(self, *, tokens: Iterable[str] = ("good-token",), upstream: str = "Ascend/pytorch",
                 fork: str = "lgxxx/pytorch", login: str | None = None,
                 repos: Iterable[str] | None = None,
                 branches: dict[str, Iterable[str]] | None = None,
                 branch_exists: Callable[[str, str], str | bool | None] | None = None,
                 git_dirs: dict[str, Path] | None = None,
                 head_forms: Iterable[str] = ("repo",), wrong_form: str = "upstream",
                 issues: Iterable[int] | None = None, web_url: str = "https://gitcode.com",
                 first_number: int = 1, members: Iterable[str] = (),
                 comments_forbidden: bool = False, per_minute: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 close_related_issue_default: bool = True,
                 list_body_limit: int | None = None, draft_from_title: bool = False,
                 rate_window: float = 60.0,
                 head_sha_lag: int = 0, honour_per_page: bool = True,
                 json_patch_ignores: Iterable[str] = (), form_patch_ignores: Iterable[str] = (),
                 list_lag: int = 0, refuse_duplicates: bool = True,
                 oldest_first: bool = False,
                 draft_by_title: bool = False, create_ignores_booleans: bool = False,
                 unstable_order: bool = False, read_lag: int = 0,
                 bad_page: int | None = None, bad_page_body: Any = None,
                 omit_head: Iterable[str] = (), wrong_base: str | None = None,
                 author: str | None = None, clock_offset: float = 0.0) -> None:
        self.tokens = set(tokens)
        self.upstream = upstream
        self.fork = fork
        self.login = login or fork.split("/")[0]
        self.repos = set(repos) if repos is not None else {upstream, fork}
        self.branches: dict[str, set[str]] = {r: set() for r in self.repos}
        for repo, names in (branches or {}).items():
            self.branches.setdefault(repo, set()).update(names)
        # Which branches exist: ``branch_exists(repo, branch)``, else real git directories
        # (``git_dirs={"me/pytorch": Path("fork.git")}``), else the ``branches`` sets.
        if branch_exists is None and git_dirs:
            branch_exists = git_branch_checker(git_dirs)
        self.branch_exists = branch_exists
        self.head_forms = set(head_forms)
        # What an unaccepted head form does: "upstream" (as reported: the head resolves to the
        # upstream branch of the same name, a PR with 0 commits; when upstream has no such
        # branch, 403 for ``fork_path`` and 404 for ``owner:branch``), or always "404"/"403".
        self.wrong_form = wrong_form
        self.issues = set(issues) if issues is not None else None
        self.closed_issues: set[int] = set()
        # Logins allowed to label and assign on the upstream (its members); others get 403.
        self.members = set(members)
        self.comments_forbidden = comments_forbidden
        # Requests per sliding 60 s (of ``clock``) before 429 without Retry-After; None: no limit.
        self.per_minute = per_minute
        self.clock = clock
        self._stamps: list[float] = []
        self.close_related_issue_default = close_related_issue_default
        self.list_body_limit = list_body_limit  # truncate bodies in list items (None: whole)
        # A PATCH that sends a title but no ``draft`` sets draft from the title's ``[WIP]``
        # prefix, as a service deriving draft from the title would (a plain title: ready).
        self.draft_from_title = draft_from_title
        # ``per_minute`` counts requests in a sliding window of this many seconds (scaled down
        # in tests; 60 is GitCode's documented minute).
        self.rate_window = rate_window
        self.rate_limited = 0  # 429s answered for the rate limit
        # The first ``head_sha_lag`` reads of a new PR show the base's SHA as ``head.sha`` (the
        # documented example shows ``head.sha == base.sha``).
        self.head_sha_lag = head_sha_lag
        self._lag_left: dict[int, int] = {}
        # False: ``per_page`` is ignored and every page holds 20 items.
        self.honour_per_page = honour_per_page
        # PATCH fields sent as JSON that are answered 200 but not taken (form encoding works).
        self.json_patch_ignores = set(json_patch_ignores)
        self.form_patch_ignores = set(form_patch_ignores)  # the same for form-encoded PATCHes
        # False: a second create from the same head into the same base opens a second PR.
        self.refuse_duplicates = refuse_duplicates
        # True: lists come oldest first whatever ``sort``/``direction`` ask (the default
        # answers newest first).
        self.oldest_first = oldest_first
        # The next ``list_lag`` list reads after a create leave the new PR out.
        self.list_lag = list_lag
        self._hidden: dict[int, int] = {}
        # ``draft`` is ignored on PATCH (either encoding) and follows the title's ``[WIP]``
        # prefix whenever a title is sent, as a GitLab-shaped service derives it.
        self.draft_by_title = draft_by_title
        # JSON booleans (``draft``, ``close_related_issue``) in a create body are ignored.
        self.create_ignores_booleans = create_ignores_booleans
        # Unless ``sort=created&direction=asc`` is asked, the list order moves by one PR
        # between page reads (as an order by update time does while PRs change).
        self.unstable_order = unstable_order
        self._shift = 0
        # The first ``read_lag`` reads (``GET /pulls/{n}``) of a new PR answer 404.
        self.read_lag = read_lag
        self._unreadable: dict[int, int] = {}
        # List page ``bad_page`` of any listing answers 200 with ``bad_page_body`` (default an
        # error object; a string is sent as an HTML page) instead of a list.
        self.bad_page = bad_page
        self.bad_page_body = bad_page_body
        # Fields left out of every PR's ``head`` object ("ref", "repo").
        self.omit_head = set(omit_head)
        # A create opens the PR into this base whatever was asked (None: the base asked).
        self.wrong_base = wrong_base
        # A create records this login as the PR's author (None: the token's user).
        self.author = author
        # The server's clock runs this many seconds ahead of the host's (its ``Date`` header).
        self.clock_offset = clock_offset
        self.duplicate_message = DUPLICATE_MESSAGE
        self.web_url = web_url
        self.prs: dict[int, FakePR] = {}
        self.requests: list[Request] = []
        self.faults: list[tuple[str, re.Pattern[str], Fault]] = []
        self.duplicate_status = 400
        self.shas: dict[tuple[str, str], str] = {}
        self.lock = threading.RLock()
        self._next_number = first_number
        self._next_id = 1000
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # PATCH/DELETE of one comment (``/pulls/comments/{id}``): "ok", or "404"/"405" as a
        # service that does not take the id it lists (or the method at all) would answer.
        self.comment_edit = "ok"
        # True: a comment PATCH with a JSON body is answered ``{}`` but not taken (the
        # documented body is formData).
        self.json_comment_ignored = False
        # (body, author): a comment another runner posts just before the next POST of a
        # comment lands, so two summaries exist and the other one is older.
        self.comment_race: tuple[str, str] | None = None
        # login -> permission on the upstream (collaborators/{login}/permission); others 404.
        self.permissions: dict[str, str] = {}
        # logins of ``permissions`` the collaborators listing does not show (an organisation's
        # members, whose permission is inherited).
        self.unlisted: set[str] = set()
        self._next_note = 50000

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeGitCode:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.01})
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGitCode:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The API base URL, e.g. ``http://127.0.0.1:41234/api/v5``."""
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{API_PREFIX}"

    # ------------------------------------------------------------------ test controls
    def add_fault(self, method: str, path_regex: str, *faults: Fault) -> None:
        """Queue faults for requests whose method and path (below /api/v5) match."""
        with self.lock:
            for fault in faults:
                self.faults.append((method.upper(), re.compile(path_regex), fault))

    def burst(self, method: str, path_regex: str, count: int, status: int = 502) -> None:
        """A 5xx burst: the next ``count`` matching requests answer ``status``."""
        self.add_fault(method, path_regex, *(Fault(status=status) for _ in range(count)))

    def server_date(self, seconds_from_now: float = 0.0) -> str:
        """An HTTP date as the server's clock (``clock_offset``) reads it."""
        return email.utils.formatdate(time.time() + self.clock_offset + seconds_from_now,
                                      usegmt=True)

    def add_branch(self, repo: str, branch: str, sha: str | None = None) -> None:
        with self.lock:
            self.branches.setdefault(repo, set()).add(branch)
            if sha:
                self.shas[(repo, branch)] = sha

    def branch_sha(self, repo: str, branch: str) -> str | None:
        """The commit the branch points at, or None when it does not exist."""
        with self.lock:
            if branch in self.branches.get(repo, set()):
                return self.shas.get((repo, branch)) or synthetic_sha(repo, branch)
        if self.branch_exists is None:
            return None
        found = self.branch_exists(repo, branch)
        if isinstance(found, str):
            return found or None
        return synthetic_sha(repo, branch) if found else None

    def has_branch(self, repo: str, branch: str) -> bool:
        return self.branch_sha(repo, branch) is not None

    def merge(self, number: int) -> set[int]:
        """Merge a PR as a maintainer would; returns the issues the merge closed."""
        with self.lock:
            pr = self.prs[number]
            pr.state, pr.merged_at = "merged", _now()
            close = (pr.close_related_issue if pr.close_related_issue is not None
                     else self.close_related_issue_default)
            closed = set(pr.issues) if close else set()
            self.closed_issues |= closed
            return closed

    def open_prs(self, head: str | None = None, base: str | None = None) -> list[FakePR]:
        with self.lock:
            return [p for p in self.prs.values() if p.state == "open"
                    and (head is None or p.head_ref == head) and (base is None or p.base_ref == base)]

    def add_pr(self, *, head_repo: str, head: str, base: str, title: str = "t", body: str = "",
               state: str = "open", author: str | None = None) -> FakePR:
        """Seed a PR directly (e.g. someone else's)."""
        with self.lock:
            return self._new_pr(title, body, head_repo, head, base, author or head_repo.split("/")[0],
                                state=state)

    def counts(self) -> dict[str, int]:
        """Requests per endpoint, numbers shown as ``{n}``: ``{"GET /repos/o/r/pulls/{n}": 4}``."""
        result: dict[str, int] = {}
        with self.lock:
            for r in self.requests:
                key = f"{r.method} {_NUMBER.sub('/{n}', r.path)}"
                result[key] = result.get(key, 0) + 1
        return result

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method != "GET"]

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for i, (m, pattern, fault) in enumerate(self.faults):
                if m == method and pattern.search(path):
                    del self.faults[i]
                    return fault
        return None

    # ------------------------------------------------------------------ model
    def _new_pr(self, title: str, body: str, head_repo: str, head: str, base: str, author: str,
                *, state: str = "open", draft: bool = False) -> FakePR:
        now = _now()
        pr = FakePR(number=self._next_number, id=self._next_id,
                    title=(WIP + title) if draft and not title.startswith(WIP) else title,
                    body=body, head_repo=head_repo, head_ref=head, base_ref=base, author=author,
                    state=state, draft=draft, created_at=now, updated_at=now,
                    merged_at=now if state == "merged" else "",
                    head_sha=self.branch_sha(head_repo, head) or "")
        self._next_number += 1
        self._next_id += 1
        self.prs[pr.number] = pr
        return pr

    def _repo_json(self, full: str) -> dict[str, Any]:
        owner, _, path = full.partition("/")
        return {"id": abs(hash(full)) % 100000, "full_name": full, "full_path": full, "path": path,
                "name": path, "namespace": {"path": owner}, "owner": {"login": owner},
                "default_branch": "master", "fork": full != self.upstream, "private": False,
                "http_url_to_repo": f"{self.web_url}/{full}.git",
                "ssh_url_to_repo": f"git@gitcode.com:{full}.git", "web_url": f"{self.web_url}/{full}"}

    def _sha(self, repo: str, ref: str, stored: str = "") -> str:
        return self.branch_sha(repo, ref) or stored or "0" * 40

    def _list_side(self, repo: str, ref: str, stored_sha: str = "") -> dict[str, Any]:
        """``head``/``base`` of a list item: ``repo.full_path``, ``namespace``, ``owner``."""
        owner, _, path = repo.partition("/")
        return {"label": ref, "ref": ref, "sha": self._sha(repo, ref, stored_sha),
                "user": {"login": owner},
                "repo": {"full_path": repo, "human_name": f"{owner} / {path}", "name": path,
                         "path": path, "namespace": {"path": owner, "full_path": owner},
                         "owner": {"login": owner}}}

    def _single_side(self, repo: str, ref: str, stored_sha: str = "") -> dict[str, Any]:
        """``head``/``base`` of ``GET /pulls/{n}``: ``full_name``, ``namespace.path``, ``path``."""
        owner, _, path = repo.partition("/")
        return {"label": ref, "ref": ref, "sha": self._sha(repo, ref, stored_sha),
                "user": {"id": "u-" + owner, "login": owner, "name": owner,
                         "avatar_url": "", "html_url": f"{self.web_url}/{owner}"},
                "repo": {"full_name": repo, "html_url": f"{self.web_url}/{repo}", "name": path,
                         "namespace": {"path": owner}, "path": path}}

    def _common_json(self, pr: FakePR) -> dict[str, Any]:
        return {
            "id": pr.id, "number": pr.number, "title": pr.title, "body": pr.body,
            "state": pr.state, "draft": pr.draft,
            "labels": [{"name": n} for n in pr.labels], "user": {"login": pr.author},
            "assignees": [{"login": n} for n in pr.assignees],
            "testers": [{"login": n} for n in pr.testers],
            "created_at": pr.created_at, "updated_at": pr.updated_at, "merged_at": pr.merged_at,
        }

    def _list_json(self, pr: FakePR, repo: str) -> dict[str, Any]:
        body = pr.body
        if self.list_body_limit is not None:
            body = body[: self.list_body_limit]
        return {
            **self._common_json(pr), "iid": pr.number, "body": body,
            "html_url": f"{self.web_url}/{repo}/merge_requests/{pr.number}",
            "close_related_issue": pr.close_related_issue,
            "head": self._head(self._list_side(pr.head_repo, pr.head_ref, pr.head_sha)),
            "base": self._list_side(repo, pr.base_ref),
            "source_branch": pr.head_ref, "target_branch": pr.base_ref, "closed_at": None,
        }

    def _head(self, side: dict[str, Any]) -> dict[str, Any]:
        """A PR's ``head`` object less the fields ``omit_head`` leaves out."""
        return {k: v for k, v in side.items()
                if k not in self.omit_head and not (k == "label" and "ref" in self.omit_head)}

    def _pr_json(self, pr: FakePR, repo: str) -> dict[str, Any]:
        return {
            **self._common_json(pr), "html_url": f"{self.web_url}/{repo}/pull/{pr.number}",
            "close_related_issue": pr.close_related_issue,
            "head": self._head(self._single_side(pr.head_repo, pr.head_ref, pr.head_sha)),
            "base": self._single_side(repo, pr.base_ref), "mergeable": True, "closed__at": "",
            **({"merge_commit_sha": pr.merge_commit_sha} if pr.merge_commit_sha else {}),
        }

    def _created_json(self, pr: FakePR, repo: str) -> dict[str, Any]:
        """The documented create answer: ``number`` and ``html_url``, no ``iid``/``head``."""
        return {
            "id": pr.id, "number": pr.number, "html_url": f"{self.web_url}/{repo}/pulls/{pr.number}",
            "url": f"{self.web_url}/api/v5/repos/{repo}/pulls/{pr.number}",
            "state": "opened" if pr.state == "open" else pr.state,
            "title": pr.title, "description": pr.body,
            "source_branch": pr.head_ref, "target_branch": pr.base_ref,
            "author": {"username": pr.author}, "created_at": pr.created_at,
            "work_in_progress": pr.draft,
        }

    # ------------------------------------------------------------------ routing
    def handle(self, method: str, path: str, query: dict[str, str], body: Any,
               auth_token: str | None, *, form: bool = False) -> tuple[int, Any]:
        """Answer one request; ``form``: the body came form-encoded, not as JSON."""
        if auth_token not in self.tokens:
            raise _Reply(401, {"message": "401 Unauthorized"})
        if self.per_minute is not None:
            with self.lock:
                now = self.clock()
                self._stamps = [t for t in self._stamps if t > now - self.rate_window]
                if len(self._stamps) >= self.per_minute:
                    self.rate_limited += 1
                    raise _Reply(429, {"message": "Too Many Requests"})  # no Retry-After
                self._stamps.append(now)
        if path == "/user" and method == "GET":
            return 200, {"login": self.login, "name": self.login, "id": "7001",
                         "html_url": f"{self.web_url}/{self.login}"}
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", path)
        if not m:
            raise _Reply(404, {"message": "404 Not Found"})
        repo = f"{m.group(1)}/{m.group(2)}"
        rest = m.group(3) or ""
        if repo not in self.repos:
            if not rest:
                raise _Reply(404, {"error_code": 1003, "error_code_name": "NOT_EXIST",
                                   "error_message": "项目不存在", "trace_id": "tr-404-repo"})
            raise _Reply(400, f"Project not found: {repo}")
        with self.lock:
            return self._route(method, repo, rest, query, body, form)

    def _route(self, method: str, repo: str, rest: str, query: dict[str, str],
               body: Any, form: bool = False) -> tuple[int, Any]:
        if rest == "" and method == "GET":
            return 200, self._repo_json(repo)
        m = re.fullmatch(r"/branches/(.+)", rest)
        if m and method == "GET":
            sha = self.branch_sha(repo, m.group(1))
            if sha is None:
                raise _Reply(404, {"message": "Branch Not Found"})
            return 200, {"name": m.group(1), "commit": {"id": sha}, "protected": False}
        if rest == "/pulls":
            if method == "GET":
                return 200, self._list(repo, query)
            if method == "POST":
                return self._create(repo, body)
        m = re.fullmatch(r"/pulls/comments/([^/]+)", rest)
        if m:
            return self._comment_route(method, m.group(1), body, form)
        if rest == "/collaborators" and method == "GET":  # member.rst §3, paged
            per_page = self._per_page(query)
            page = max(1, int(query.get("page", 1)))
            listed = [login for login in self.permissions if login not in self.unlisted]
            return 200, [self._member_json(login) for login in
                         listed[(page - 1) * per_page: page * per_page]]
        m = re.fullmatch(r"/collaborators/([^/]+)/permission", rest)
        if m and method == "GET":
            login = m.group(1)
            if login not in self.permissions:
                raise _Reply(404, {"error_code": 404, "error_message": "用户不是仓库成员"})
            return 200, {"id": 7000 + len(login), "login": login,
                         "permission": self.permissions[login]}
        m = re.fullmatch(r"/issues/(\d+)", rest)
        if m and method == "GET":
            number = int(m.group(1))
            if self.issues is not None and number not in self.issues:
                raise _Reply(404, {"error_message": "issue not found"})
            return 200, {"id": 90000 + number, "number": str(number), "title": f"issue {number}",
                         "state": "closed" if number in self.closed_issues else "open"}
        m = re.fullmatch(r"/pulls/(\d+)(/.*)?", rest)
        if m:
            pr = self.prs.get(int(m.group(1)))
            if pr is None:
                raise _Reply(404, {"message": "Not Found Pull Request"})
            return self._pr_route(method, repo, pr, m.group(2) or "", query, body, form)
        raise _Reply(404, {"message": "404 Not Found"})

    def add_comment(self, number: int, body: str, *, author: str | None = None) -> dict[str, Any]:
        """A comment on PR ``number`` as GitCode lists it (``note_id``: the integer id)."""
        with self.lock:
            self._next_note += 1
            now = _now()
            note = {"id": str(self._next_note), "note_id": self._next_note, "body": body,
                    "created_at": now, "updated_at": now,
                    "user": {"id": 7001, "login": author or self.login}}
            self.prs[number].comments.append(note)
            return note

    def _comment_route(self, method: str, ident: str, body: Any,
                       form: bool = False) -> tuple[int, Any]:
        found = [(pr, c) for pr in self.prs.values() for c in pr.comments if c["id"] == ident]
        if method != "GET" and self.comment_edit != "ok":
            raise _Reply(int(self.comment_edit), {"error_message": "Method Not Allowed"
                                                  if self.comment_edit == "405" else "Not Found"})
        if not found:
            raise _Reply(404, {"error_message": "Not Found Note"})
        pr, note = found[0]
        if method == "GET":
            return 200, note
        if note["user"]["login"] != self.login:
            raise _Reply(403, {"error_message": "只能编辑或删除自己的评论"})
        if method == "DELETE":
            pr.comments.remove(note)
            return 200, {}
        if method == "PATCH":
            if not isinstance(body, dict) or not body.get("body"):
                raise _Reply(400, {"error_message": "body is required"})
            if form or not self.json_comment_ignored:
                note["body"] = str(body["body"])
                note["updated_at"] = _now()
            return 200, {}
        raise _Reply(405, {"error_message": "Method Not Allowed"})

    def _list(self, repo: str, query: dict[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "all")  # GitCode's default, unlike Gitee/GitHub
        per_page = self._per_page(query)
        page = max(1, int(query.get("page", 1)))
        if self.bad_page == page:
            body = self.bad_page_body
            raise _Reply(200, body if body is not None else
                         {"error_code": 500, "error_message": "系统繁忙，请稍后重试"},
                         {"Content-Type": "text/html; charset=utf-8"} if isinstance(body, str)
                         else {})
        stable = (query.get("sort"), query.get("direction")) == ("created", "asc")
        items = [p for p in sorted(self.prs.values(),
                                   key=lambda p: p.number if stable else -p.number)
                 if (state == "all" or p.state == state)
                 and ("base" not in query or p.base_ref == query["base"])
                 and not self._hide(p)]
        if self.oldest_first:
            items.sort(key=lambda p: p.number)
        if self.unstable_order and not stable and items:
            shift = self._shift % len(items)
            items = items[shift:] + items[:shift]
            self._shift += 1
        chunk = items[(page - 1) * per_page: page * per_page]
        return [self._list_json(p, repo) for p in chunk]

    def _member_json(self, login: str) -> dict[str, Any]:
        """One item of the collaborators listing, in member.rst §3's shape: ``username``, no
        ``login``, and the ``permissions`` flags (``null`` where not granted)."""
        level = self.permissions[login]
        return {"id": str(7000 + len(login)), "name": login, "username": login,
                "type": "ProjectMember",
                "permissions": {"pull": True,
                                "push": True if level in ("write", "push", "maintain") else None,
                                "admin": True if level == "admin" else None}}

    def _per_page(self, query: dict[str, str]) -> int:
        if not self.honour_per_page:
            return 20
        return max(1, min(100, int(query.get("per_page", 20))))

    def _hide(self, pr: FakePR) -> bool:
        """Whether this list read still leaves out a PR created a moment ago (``list_lag``)."""
        left = self._hidden.get(pr.number, 0)
        if left <= 0:
            return False
        self._hidden[pr.number] = left - 1
        return True

    def _resolve_head(self, body: dict[str, Any]) -> tuple[str, str]:
        """(head repo, branch) the service picks for a create, or a refusal."""
        head = str(body.get("head", ""))
        fork_path = body.get("fork_path")
        if ":" not in head:
            return self.upstream, head
        prefix, _, branch = head.partition(":")
        if "/" in prefix:
            form, repo = "repo", prefix
        elif fork_path:
            form, repo = "fork_path", str(fork_path)
        else:
            form, repo = "owner", f"{prefix}/{self.upstream.split('/')[1]}"
        if form in self.head_forms:
            return repo, branch
        if self.wrong_form == "upstream" and self.has_branch(self.upstream, branch):
            return self.upstream, branch  # the reported mis-resolution: 0 commits
        if self.wrong_form == "403" or (self.wrong_form == "upstream" and form == "fork_path"):
            raise _Reply(403, {"error_message": "No permission to access the source project",
                               "trace_id": "tr-403"})
        raise _Reply(404, {"error_code": 1003, "error_message": f"Can not find the branch: {branch}",
                           "trace_id": "tr-404"})

    def _create(self, repo: str, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            raise _Reply(400, {"message": "invalid request body"})
        for key in ("title", "head", "base"):
            if not body.get(key):
                raise _Reply(400, {"error_message": f"{key} is required", "trace_id": "tr-400"})
        head_repo, branch = self._resolve_head(body)
        if not self.has_branch(head_repo, branch):
            raise _Reply(400, {"error_message": f"Can not find the branch: {branch}",
                               "trace_id": "tr-400-branch"})
        if str(body["base"]) not in self.branches.get(repo, set()) and self.branches.get(repo):
            raise _Reply(400, {"error_message": f"Can not find the branch: {body['base']}"})
        for pr in self.prs.values() if self.refuse_duplicates else ():
            if pr.state in ("open", "locked") and pr.head_repo == head_repo \
                    and pr.head_ref == branch and pr.base_ref == body["base"]:
                raise _Reply(self.duplicate_status,
                             {"error_code": self.duplicate_status,
                              "error_message": self.duplicate_message.format(number=pr.number)})
        if self.create_ignores_booleans:
            body = {k: v for k, v in body.items() if not isinstance(v, bool)}
        draft = body.get("draft") in (True, "true", "True", 1)
        pr = self._new_pr(str(body["title"]), str(body.get("body", "")), head_repo, branch,
                          self.wrong_base or str(body["base"]), self.author or self.login,
                          draft=draft)
        if self.read_lag:
            self._unreadable[pr.number] = self.read_lag
        if "close_related_issue" in body:
            pr.close_related_issue = body["close_related_issue"] in (True, "true", "True", 1)
        if self.head_sha_lag:
            self._lag_left[pr.number] = self.head_sha_lag
        if self.list_lag:
            self._hidden[pr.number] = self.list_lag
        return 201, self._created_json(pr, repo)

    def _pr_route(self, method: str, repo: str, pr: FakePR, sub: str, query: dict[str, str],
                  body: Any, form: bool = False) -> tuple[int, Any]:
        if sub == "" and method == "GET":
            if self._unreadable.get(pr.number, 0) > 0:
                self._unreadable[pr.number] -= 1
                raise _Reply(404, {"message": "Not Found Pull Request"})
            data = self._pr_json(pr, repo)
            if self._lag_left.get(pr.number, 0) > 0:
                self._lag_left[pr.number] -= 1
                data["head"]["sha"] = data["base"]["sha"]
            return 200, data
        if sub == "" and method == "PATCH":
            if not isinstance(body, dict) or ("title" in body) != ("body" in body):
                raise _Reply(400, {"error_message": "title and body must be given together"})
            ignored = self.form_patch_ignores if form else self.json_patch_ignores
            if self.draft_by_title:
                ignored = {*ignored, "draft"}
            body = {k: v for k, v in body.items() if k not in ignored}
            for key in ("title", "body"):
                if key in body:
                    setattr(pr, key, str(body[key]))
            if "state" in body:
                state = str(body["state"])
                if state not in ("open", "closed", "reopen"):
                    raise _Reply(400, {"error_message": f"invalid state: {state}"})
                pr.state = "open" if state == "reopen" else state
            if "draft" in body:
                pr.draft = body["draft"] in (True, "true", "True", 1)
            elif (self.draft_from_title or self.draft_by_title) and "title" in body:
                pr.draft = pr.title.startswith(WIP.strip())
            if pr.draft and not pr.title.startswith(WIP):
                pr.title = WIP + pr.title
            if "close_related_issue" in body:
                pr.close_related_issue = body["close_related_issue"] in (True, "true", "True", 1)
            pr.updated_at = _now()
            return 200, {"title": pr.title, "body": pr.body, "state": pr.state,
                         "created_at": pr.created_at, "updated_at": pr.updated_at}
        if sub == "/files" and method == "GET":  # no paging documented: every file at once
            return 200, [_file_json(old, new, pr.head_sha or "0" * 40) for old, new in pr.files]
        if sub == "/issues":
            if method == "GET":
                per_page = self._per_page(query)
                page = max(1, int(query.get("page", 1)))
                chunk = pr.issues[(page - 1) * per_page: page * per_page]
                return 200, [{"id": 90000 + n, "number": str(n), "title": f"issue {n}",
                              "state": "closed" if n in self.closed_issues else "open"}
                             for n in chunk]
            if method in ("POST", "DELETE"):
                if not isinstance(body, list) or not all(isinstance(n, int) for n in body):
                    raise _Reply(400, {"error_message": "body must be an array of issue numbers"})
                if self.issues is not None and any(n not in self.issues for n in body):
                    raise _Reply(404, {"error_message": "issue not found"})
                for n in body:
                    if method == "POST" and n not in pr.issues:
                        pr.issues.append(n)
                    if method == "DELETE" and n in pr.issues:
                        pr.issues.remove(n)
                return 200, [{"id": 90000 + n, "number": str(n), "title": f"issue {n}"}
                             for n in body]
        if sub in ("/labels", "/assignees", "/reviewers", "/testers") and method != "GET" \
                and self.login not in self.members:
            raise _Reply(403, {"error_code": 403, "error_code_name": "FORBIDDEN",
                               "error_message": "无权限操作：您不是该项目的成员",
                               "trace_id": "tr-403-member"})
        if sub == "/comments":
            if method == "POST" and self.comments_forbidden:
                raise _Reply(403, {"error_message": "You are not allowed to comment",
                                   "trace_id": "tr-403-comment"})
            if method == "POST":
                if not isinstance(body, dict) or not body.get("body"):
                    raise _Reply(400, {"error_message": "body is required"})
                if self.comment_race is not None:
                    other, author = self.comment_race
                    self.comment_race = None
                    self.add_comment(pr.number, other, author=author)
                note = self.add_comment(pr.number, str(body["body"]))
                return 201, {"id": note["id"], "body": note["body"], "note_id": note["note_id"]}
            if method == "GET":
                per_page = self._per_page(query)
                page = max(1, int(query.get("page", 1)))
                return 200, pr.comments[(page - 1) * per_page: page * per_page]
        if sub == "/labels" and method in ("POST", "PUT"):
            if not isinstance(body, list):
                raise _Reply(400, {"error_message": "body must be an array of label names"})
            if method == "PUT":
                pr.labels = []
            pr.labels.extend(n for n in body if n not in pr.labels)
            return 201, [{"name": n} for n in pr.labels]
        if sub in ("/assignees", "/reviewers", "/testers") and method == "POST":
            key = sub[1:]
            if not isinstance(body, dict) or not isinstance(body.get(key), str):
                raise _Reply(400, {"error_message": f"{key} is required"})
            names = [n for n in body[key].split(",") if n]
            current: list[str] = getattr(pr, key)
            add = body.get("add") in (True, "true") or key == "assignees"
            if not add:
                current.clear()
            current.extend(n for n in names if n not in current)
            return 201, {key: [{"login": n} for n in current]}
        raise _Reply(404, {"message": "404 Not Found"})


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitCode
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # keep-alive replies would otherwise wait for delayed ACKs

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
        pass

    def _dispatch(self) -> None:
        fake = self.fake
        split = urlsplit(self.path)
        path = unquote(split.path)
        if path.startswith(API_PREFIX):
            path = path[len(API_PREFIX):]
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        form = False
        if raw:
            ctype = self.headers.get("Content-Type", "")
            text = raw.decode("utf-8", "replace")
            if "json" in ctype or text[:1] in "[{":
                try:
                    body = json.loads(text)
                except ValueError:
                    body = text
            else:
                body = {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}
                form = True
        token, auth = None, None
        if self.headers.get("PRIVATE-TOKEN"):
            token, auth = self.headers["PRIVATE-TOKEN"], "private-token"
        elif (self.headers.get("Authorization") or "").startswith("Bearer "):
            token, auth = self.headers["Authorization"][len("Bearer "):], "bearer"
        elif "access_token" in query:
            token, auth = query["access_token"], "query"
        record = Request(self.command, path, self.path, query, body, auth)
        with fake.lock:
            fake.requests.append(record)
        fault = fake._take_fault(self.command, path)
        if fault is not None and fault.barrier is not None:
            try:
                fault.barrier.wait(BARRIER_WAIT)
            except threading.BrokenBarrierError:
                pass  # the test sees ``barrier.broken``
        if fault is not None and not fault.after and not fault.stall:
            if fault.drop:
                self.close_connection = True
                return
            if fault.status is not None:
                record.status = fault.status
                self._send(fault.status, fault.body if fault.body is not None else
                           {"message": f"injected {fault.status}"}, fault.headers)
                return
        try:
            status, payload = fake.handle(self.command, path, query, body, token, form=form)
            headers: dict[str, str] = {}
        except _Reply as reply:
            status, payload, headers = reply.status, reply.body, reply.headers
        if fault is not None:
            if fault.stall:
                time.sleep(fault.stall)
            if fault.drop:
                self.close_connection = True
                return
            if fault.status is not None:
                status, payload, headers = fault.status, (
                    fault.body if fault.body is not None else {"message": f"injected {fault.status}"}
                ), fault.headers
        record.status = status
        try:
            self._send(status, payload, headers)
        except OSError:
            pass  # the client gave up (e.g. after a stall)

    def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        if isinstance(payload, str):
            data, ctype = payload.encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload, ensure_ascii=False).encode(), "application/json"
        headers = dict(headers)
        ctype = headers.pop("Content-Type", ctype)
        self.log_request(status)
        self.send_response_only(status)
        self.send_header("Server", "fake-gitcode")
        self.send_header("Date", headers.pop(
            "Date", email.utils.formatdate(time.time() + self.fake.clock_offset, usegmt=True)))
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _dispatch
