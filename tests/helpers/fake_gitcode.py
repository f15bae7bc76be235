"""A stateful fake GitCode REST v5 server for tests, faithful to ``shared/docs/gitcode-api.md``.

Quirks reproduced: ``PRIVATE-TOKEN`` / Bearer auth with ``401 {"message": "401 Unauthorized"}``;
repository not found as 404 JSON (``GET /repos/o/r``) or 400 plain text (everything below it);
list default ``state=all``, ``per_page`` default 20 / max 100, ``head`` filter ignored,
``head.label`` the bare branch; MR-shaped create response (``iid``, ``description``,
``source_branch``, ``state: "opened"``, no ``head``/``base``/``html_url``); minimal PATCH
response (title and body must come together); linked-issue numbers as strings; ``merged_at: ""``.

Usage::

    server = FakeGitCode(tokens={"tok"}, upstream="Ascend/pytorch", fork="me/pytorch")
    server.start(); forge = GitCodeForge(server.url, ...); ...; server.stop()

Fault injection: ``server.add_fault("POST", r"/pulls$", Fault(status=502))`` queues faults per
(method, path regex); each matching request consumes one. See :class:`Fault`.
"""

from __future__ import annotations

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


@dataclass
class Fault:
    """One injected misbehaviour.

    ``status``: answer this status (with ``body``/``headers``) instead of handling the request.
    ``drop``: close the connection without any reply.
    ``after``: handle the request first (the state changes!), then apply ``status``/``drop``.
    ``stall``: handle the request, sleep this many seconds, then reply normally (or per the above).
    """

    status: int | None = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    after: bool = False
    stall: float = 0.0


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
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    reviewers: list[str] = field(default_factory=list)
    testers: list[str] = field(default_factory=list)
    issues: list[int] = field(default_factory=list)
    comments: list[dict[str, Any]] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    merged_at: str = ""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def git_branch_checker(repos: dict[str, Path]) -> Callable[[str, str], bool]:
    """A ``branch_exists(repo, branch)`` that asks real (bare) git repositories."""

    def exists(repo: str, branch: str) -> bool:
        path = repos.get(repo)
        if path is None:
            return False
        proc = subprocess.run(
            ["git", "--git-dir", str(path), "rev-parse", "--verify", "--quiet",
             f"refs/heads/{branch}^{{commit}}"],
            capture_output=True, env={**os.environ, "LANG": "C", "LC_ALL": "C"}, check=False)
        return proc.returncode == 0

    return exists


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
                 branch_exists: Callable[[str, str], bool] | None = None,
                 git_dirs: dict[str, Path] | None = None,
                 head_forms: Iterable[str] = HEAD_FORMS, wrong_form: str = "404",
                 issues: Iterable[int] | None = None, web_url: str = "https://gitcode.com",
                 first_number: int = 1) -> None:
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
        # What an unaccepted head form does: "404", "403", or "upstream" (opens a PR from the
        # upstream branch of the same name: the worst real-world behaviour).
        self.wrong_form = wrong_form
        self.issues = set(issues) if issues is not None else None
        self.web_url = web_url
        self.prs: dict[int, FakePR] = {}
        self.requests: list[Request] = []
        self.faults: list[tuple[str, re.Pattern[str], Fault]] = []
        self.duplicate_status = 400
        self.lock = threading.RLock()
        self._next_number = first_number
        self._next_id = 1000
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

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

    def add_branch(self, repo: str, branch: str) -> None:
        with self.lock:
            self.branches.setdefault(repo, set()).add(branch)

    def has_branch(self, repo: str, branch: str) -> bool:
        with self.lock:
            if branch in self.branches.get(repo, set()):
                return True
        return self.branch_exists is not None and self.branch_exists(repo, branch)

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
        pr = FakePR(number=self._next_number, id=self._next_id, title=title, body=body,
                    head_repo=head_repo, head_ref=head, base_ref=base, author=author, state=state,
                    draft=draft, created_at=now, updated_at=now,
                    merged_at=now if state == "merged" else "")
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

    def _side(self, repo: str, ref: str) -> dict[str, Any]:
        owner, _, path = repo.partition("/")
        return {"label": ref, "ref": ref, "sha": "0" * 40, "user": {"login": owner},
                "repo": {"full_path": repo, "full_name": repo, "path": path, "owner": {"login": owner}}}

    def _pr_json(self, pr: FakePR, repo: str) -> dict[str, Any]:
        return {
            "id": pr.id, "number": pr.number, "iid": pr.number,
            "html_url": f"{self.web_url}/{repo}/merge_requests/{pr.number}",
            "title": pr.title, "body": pr.body, "state": pr.state, "draft": pr.draft,
            "labels": [{"name": n} for n in pr.labels], "user": {"login": pr.author},
            "assignees": [{"login": n} for n in pr.assignees],
            "testers": [{"login": n} for n in pr.testers],
            "head": self._side(pr.head_repo, pr.head_ref), "base": self._side(repo, pr.base_ref),
            "source_branch": pr.head_ref, "target_branch": pr.base_ref, "mergeable": True,
            "created_at": pr.created_at, "updated_at": pr.updated_at, "merged_at": pr.merged_at,
            "closed_at": "",
        }

    def _mr_json(self, pr: FakePR, repo: str) -> dict[str, Any]:
        return {
            "id": pr.id, "iid": pr.number, "number": pr.number, "project_id": 4242,
            "state": "opened" if pr.state == "open" else pr.state,
            "title": ("[WIP] " if pr.draft else "") + pr.title, "description": pr.body,
            "source_branch": pr.head_ref, "target_branch": pr.base_ref,
            "web_url": f"{self.web_url}/{repo}/merge_requests/{pr.number}",
            "author": {"username": pr.author}, "created_at": pr.created_at,
        }

    # ------------------------------------------------------------------ routing
    def handle(self, method: str, path: str, query: dict[str, str], body: Any,
               auth_token: str | None) -> tuple[int, Any]:
        if auth_token not in self.tokens:
            raise _Reply(401, {"message": "401 Unauthorized"})
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
            return self._route(method, repo, rest, query, body)

    def _route(self, method: str, repo: str, rest: str, query: dict[str, str],
               body: Any) -> tuple[int, Any]:
        if rest == "" and method == "GET":
            return 200, self._repo_json(repo)
        m = re.fullmatch(r"/branches/(.+)", rest)
        if m and method == "GET":
            if not self.has_branch(repo, m.group(1)):
                raise _Reply(404, {"message": "Branch Not Found"})
            return 200, {"name": m.group(1), "commit": {"id": "0" * 40}, "protected": False}
        if rest == "/pulls":
            if method == "GET":
                return 200, self._list(repo, query)
            if method == "POST":
                return self._create(repo, body)
        m = re.fullmatch(r"/pulls/(\d+)(/.*)?", rest)
        if m:
            pr = self.prs.get(int(m.group(1)))
            if pr is None:
                raise _Reply(404, {"message": "Not Found Pull Request"})
            return self._pr_route(method, repo, pr, m.group(2) or "", body)
        raise _Reply(404, {"message": "404 Not Found"})

    def _list(self, repo: str, query: dict[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "all")  # GitCode's default, unlike Gitee/GitHub
        per_page = max(1, min(100, int(query.get("per_page", 20))))
        page = max(1, int(query.get("page", 1)))
        items = [p for p in sorted(self.prs.values(), key=lambda p: -p.number)
                 if (state == "all" or p.state == state)
                 and ("base" not in query or p.base_ref == query["base"])]
        chunk = items[(page - 1) * per_page: page * per_page]
        return [self._pr_json(p, repo) for p in chunk]

    def _resolve_head(self, body: dict[str, Any]) -> tuple[str | None, str]:
        """(head repo or None when the form is not accepted, branch)."""
        head = str(body.get("head", ""))
        fork_path = body.get("fork_path")
        if ":" not in head:
            return self.upstream, head
        prefix, _, branch = head.partition(":")
        if "/" in prefix:
            return (prefix if "repo" in self.head_forms else None), branch
        if fork_path:
            return (str(fork_path) if "fork_path" in self.head_forms else None), branch
        candidate = f"{prefix}/{self.upstream.split('/')[1]}"
        return (candidate if "owner" in self.head_forms else None), branch

    def _create(self, repo: str, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            raise _Reply(400, {"message": "invalid request body"})
        for key in ("title", "head", "base"):
            if not body.get(key):
                raise _Reply(400, {"error_message": f"{key} is required", "trace_id": "tr-400"})
        head_repo, branch = self._resolve_head(body)
        if head_repo is None:
            if self.wrong_form == "upstream":
                head_repo = repo
            elif self.wrong_form == "403":
                raise _Reply(403, {"error_message": "No permission to access the source project",
                                   "trace_id": "tr-403"})
            else:
                raise _Reply(404, {"error_code": 1003, "error_message": "Source project not found",
                                   "trace_id": "tr-404"})
        elif not self.has_branch(head_repo, branch):
            raise _Reply(400, {"error_message": f"Can not find the branch: {branch}",
                               "trace_id": "tr-400-branch"})
        if str(body["base"]) not in self.branches.get(repo, set()) and self.branches.get(repo):
            raise _Reply(400, {"error_message": f"Can not find the branch: {body['base']}"})
        for pr in self.prs.values():
            if pr.state == "open" and pr.head_repo == head_repo and pr.head_ref == branch \
                    and pr.base_ref == body["base"]:
                raise _Reply(self.duplicate_status,
                             {"error_message": f"Another open merge request already exists for "
                                               f"this source branch: !{pr.number}"})
        draft = body.get("draft") in (True, "true", "True", 1)
        pr = self._new_pr(str(body["title"]), str(body.get("body", "")), head_repo, branch,
                          str(body["base"]), self.login, draft=draft)
        return 201, self._mr_json(pr, repo)

    def _pr_route(self, method: str, repo: str, pr: FakePR, sub: str, body: Any) -> tuple[int, Any]:
        if sub == "" and method == "GET":
            return 200, self._pr_json(pr, repo)
        if sub == "" and method == "PATCH":
            if not isinstance(body, dict) or ("title" in body) != ("body" in body):
                raise _Reply(400, {"error_message": "title and body must be given together"})
            for key in ("title", "body", "state"):
                if key in body:
                    setattr(pr, key, str(body[key]))
            if "draft" in body:
                pr.draft = bool(body["draft"])
            pr.updated_at = _now()
            return 200, {"title": pr.title, "body": pr.body, "state": pr.state,
                         "created_at": pr.created_at, "updated_at": pr.updated_at}
        if sub == "/issues":
            if method == "GET":
                return 200, [{"id": 90000 + n, "number": str(n), "title": f"issue {n}"}
                             for n in pr.issues]
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
        if sub == "/comments":
            if method == "POST":
                if not isinstance(body, dict) or not body.get("body"):
                    raise _Reply(400, {"error_message": "body is required"})
                note = {"id": str(50000 + len(pr.comments)), "body": body["body"],
                        "note_id": 50000 + len(pr.comments)}
                pr.comments.append(note)
                return 201, note
            if method == "GET":
                return 200, pr.comments
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
        if raw:
            ctype = self.headers.get("Content-Type", "")
            text = raw.decode("utf-8", "replace")
            if "json" in ctype or text[:1] in "[{":
                try:
                    body = json.loads(text)
                except ValueError:
                    body = text
            else:
                body = {k: v[-1] for k, v in parse_qs(text).items()}
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
            status, payload = fake.handle(self.command, path, query, body, token)
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
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _dispatch
