"""The embedded offline forge: PRs in one SQLite file (``.backport/forge.sqlite``).

Used by ``backport demo``, by tests and by teams without a GitCode account. It is safe across
threads and processes: every write runs in a ``BEGIN IMMEDIATE`` transaction and creating a PR
re-checks, inside that transaction, for an open PR with the same head and base (a partial
unique index backs this up), so two concurrent runs never open two PRs for one branch.

PR URLs have the form ``local://<upstream>/pull/<n>`` (e.g. ``local://Ascend/pytorch/pull/3``):
readable, clearly not a web page, and shaped like GitCode's ``/pull/<n>`` links. Reads never
create the database file, so a dry run leaves the state directory untouched.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from backport.config.model import fork_of
from backport.errors import BackportError
from backport.forge.base import WRITE_PERMISSIONS, Comment, PrFile, PullRequest, SourcePrInfo

SCHEMA = """
CREATE TABLE IF NOT EXISTS prs (
    number     INTEGER PRIMARY KEY AUTOINCREMENT,
    repo       TEXT NOT NULL,
    head       TEXT NOT NULL,
    head_repo  TEXT NOT NULL,
    base       TEXT NOT NULL,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    state      TEXT NOT NULL DEFAULT 'open',
    draft      INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS prs_one_open
    ON prs(repo, head_repo, head, base) WHERE state = 'open';
CREATE TABLE IF NOT EXISTS pr_issues (
    pr    INTEGER NOT NULL REFERENCES prs(number),
    issue INTEGER NOT NULL,
    PRIMARY KEY (pr, issue)
);
CREATE TABLE IF NOT EXISTS pr_sources (
    pr           INTEGER PRIMARY KEY REFERENCES prs(number),
    head_sha     TEXT NOT NULL DEFAULT '',
    merge_commit TEXT NOT NULL DEFAULT '',
    author       TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS pr_files (
    pr       INTEGER NOT NULL REFERENCES prs(number),
    seq      INTEGER NOT NULL,
    old_path TEXT NOT NULL DEFAULT '',  -- '' for a new file
    new_path TEXT NOT NULL DEFAULT '',  -- '' for a deleted file
    PRIMARY KEY (pr, seq)
);
CREATE TABLE IF NOT EXISTS pr_merged (
    pr        INTEGER PRIMARY KEY REFERENCES prs(number),
    merged_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS comments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    pr         INTEGER NOT NULL REFERENCES prs(number),
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    author     TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS collaborators (
    repo       TEXT NOT NULL,
    login      TEXT NOT NULL,
    permission TEXT NOT NULL,
    PRIMARY KEY (repo, login)
);
CREATE TABLE IF NOT EXISTS pr_people (
    pr    INTEGER NOT NULL REFERENCES prs(number),
    role  TEXT NOT NULL,  -- label | assignee | reviewer | tester
    name  TEXT NOT NULL,
    PRIMARY KEY (pr, role, name)
);
"""

STATES = ("open", "closed", "merged")
LOCAL_USER_VARIABLE = "BACKPORT_LOCAL_USER"  # the local forge's user, as a token names one


def _add_comment_authors(conn: sqlite3.Connection) -> None:
    """A database written before comments had authors gains the column (old comments: "")."""
    if "author" not in {r[1] for r in conn.execute("PRAGMA table_info(comments)")}:
        conn.execute("ALTER TABLE comments ADD COLUMN author TEXT NOT NULL DEFAULT ''")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LocalForge:
    """A forge whose PRs live in a SQLite database at ``path``."""

    name = "local"

    def __init__(self, path: Path, *, upstream: str, fork: str, user: str = "",
                 busy_timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.upstream = upstream
        self._fork = fork  # "" follows the user: `fork`
        self.user = user  # who this forge's client is (BACKPORT_LOCAL_USER); "" the fork's owner
        self.busy_timeout = busy_timeout

    @property
    def fork(self) -> str:
        """The fork: as branches.yaml names it, else the user's (:meth:`current_user`)."""
        return self._fork or fork_of(self.upstream, self.current_user())

    def current_user(self) -> str:
        """The local forge's user, as a token's login on GitCode: ``user``, else the owner of
        the fork branches.yaml names."""
        login = self.user or self._fork.partition("/")[0]
        if not login:
            raise BackportError("auth", self.missing()[0])
        return login

    def _writer(self) -> str:
        """Who a comment this forge writes is by: :meth:`current_user`, "" when it knows none."""
        return self.user or self._fork.partition("/")[0]

    # ------------------------------------------------------------------ storage
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        conn.row_factory = sqlite3.Row
        return conn

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection | None]:
        """A read connection, or None when the database does not exist yet."""
        if not self.path.exists():
            yield None
            return
        conn = self._connect()
        try:
            yield conn
        finally:
            conn.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE`` (committed on success, rolled back on error)."""
        created = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = self._connect()
        try:
            if created:
                with contextlib.suppress(OSError):
                    os.chmod(self.path, 0o600)
            conn.executescript(SCHEMA)
            _add_comment_authors(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise BackportError("forge", f"Local forge database {self.path} failed: {exc}.") from None
        finally:
            conn.close()

    def url(self, number: int) -> str:
        return f"local://{self.upstream}/pull/{number}"

    def _pr(self, row: sqlite3.Row) -> PullRequest:
        return PullRequest(
            number=row["number"], url=self.url(row["number"]), title=row["title"],
            body=row["body"], head=row["head"], head_repo=row["head_repo"], base=row["base"],
            state=row["state"], draft=bool(row["draft"]), author=self._author(row),
        )

    def _author(self, row: sqlite3.Row) -> str:
        """Who opened the PR: the login :meth:`add_source_pr` recorded, else the owner of its
        head repository (this tool opens PRs from the fork)."""
        keys = row.keys()
        recorded = row["author"] if "author" in keys else None
        return recorded or str(row["head_repo"]).partition("/")[0]

    @staticmethod
    def _optional(conn: sqlite3.Connection, sql: str, args: tuple) -> list[sqlite3.Row]:
        """Rows of a table a database written by an older version may lack (none then)."""
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError:
            return []

    def _find(self, conn: sqlite3.Connection, head: str, base: str) -> sqlite3.Row | None:
        return conn.execute(
            "SELECT * FROM prs WHERE repo = ? AND head_repo = ? AND head = ? AND base = ? "
            "AND state = 'open' ORDER BY number LIMIT 1",
            (self.upstream, self.fork, head, base),
        ).fetchone()

    def _row(self, conn: sqlite3.Connection | None, number: int) -> sqlite3.Row:
        row = None
        if conn is not None:
            row = conn.execute("SELECT * FROM prs WHERE repo = ? AND number = ?",
                               (self.upstream, number)).fetchone()
        if row is None:
            raise BackportError("forge", f"The local forge {self.path} has no PR !{number} "
                                         f"in {self.upstream}.")
        return row

    def _holding(self, conn: sqlite3.Connection | None, number: int) -> sqlite3.Connection:
        """``conn`` itself once it is known to hold PR !``number`` (else the error of :meth:`_row`)."""
        self._row(conn, number)
        assert conn is not None  # _row raised otherwise
        return conn

    # ------------------------------------------------------------------ protocol
    def missing(self) -> list[str]:
        """Nothing, unless the fork is to follow a user this forge does not know."""
        if self._fork or self.user:
            return []
        return [f"no user for the local forge {self.path}: set {LOCAL_USER_VARIABLE} (the fork "
                "follows it) or fork: in branches.yaml"]

    def preflight(self) -> None:
        """Nothing to check beyond the database being writable when it exists."""
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise BackportError("forge", f"The local forge database {self.path} is not writable.")

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        with self._read() as conn:
            row = self._find(conn, head, base) if conn is not None else None
            return self._pr(row) if row is not None else None

    def get_pr(self, number: int) -> PullRequest:
        with self._read() as conn:
            return self._pr(self._row(conn, number))

    def get_source_pr(self, number: int) -> SourcePrInfo:
        """PR ``number`` with what :meth:`add_source_pr` recorded of its commits (none for a PR
        this tool opened from the fork)."""
        with self._read() as conn:
            row = self._row(conn, number)
            assert conn is not None  # _row raised otherwise
            try:
                extra = conn.execute("SELECT head_sha, merge_commit, author FROM pr_sources "
                                     "WHERE pr = ?", (number,)).fetchone()
            except sqlite3.OperationalError:  # a database written before pr_sources existed
                extra = None
            merged = self._optional(conn, "SELECT merged_at FROM pr_merged WHERE pr = ?",
                                    (number,))
        issues = tuple(self.linked_issues(number))
        return SourcePrInfo(
            number=number, state=row["state"], title=row["title"], body=row["body"],
            base=row["base"], head=row["head"], head_sha=extra["head_sha"] if extra else "",
            merge_commit_sha=extra["merge_commit"] if extra else "",
            author=extra["author"] if extra else "", issues=issues,
            merged_at=merged[0]["merged_at"] if merged and row["state"] == "merged" else "")

    def pr_files(self, number: int) -> list[PrFile]:
        """What :meth:`add_source_pr` recorded of the PR's files (none for a PR this tool
        opened from the fork)."""
        with self._read() as conn:
            conn = self._holding(conn, number)
            rows = self._optional(conn, "SELECT old_path, new_path FROM pr_files WHERE pr = ? "
                                        "ORDER BY seq", (number,))
        return [PrFile(r["old_path"] or None, r["new_path"] or None) for r in rows]

    def list_prs(self, state: str = "open", *, fresh: bool = False) -> list[PullRequest]:
        with self._read() as conn:
            if conn is None:
                return []
            if state == "all":
                rows = conn.execute("SELECT * FROM prs WHERE repo = ? ORDER BY number",
                                    (self.upstream,)).fetchall()
            else:
                rows = conn.execute("SELECT * FROM prs WHERE repo = ? AND state = ? ORDER BY number",
                                    (self.upstream, state)).fetchall()
            return [self._pr(r) for r in rows]

    def later_prs(self, number: int, base: str) -> list[PullRequest]:
        with self._read() as conn:
            if conn is None:
                return []
            where = ("WHERE repo = ? AND base = ? AND number > ? AND state IN ('open', "
                     "'merged') ORDER BY number")
            args = (self.upstream, base, int(number))
            try:  # with the author add_source_pr recorded
                rows = conn.execute("SELECT prs.*, pr_sources.author AS author FROM prs LEFT "
                                    f"JOIN pr_sources ON pr_sources.pr = prs.number {where}",
                                    args).fetchall()
            except sqlite3.OperationalError:  # a database written before pr_sources existed
                rows = conn.execute(f"SELECT * FROM prs {where}", args).fetchall()
            return [self._pr(r) for r in rows]

    def push_credentials(self, url: str) -> dict[str, str] | None:
        """The local forge needs none: its fork is a path git reaches directly."""
        return None

    def create_pr(self, head: str, base: str, title: str, body: str, *,
                  draft: bool = False, head_sha: str | None = None,
                  close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        with self._write() as conn:
            row = self._find(conn, head, base)
            if row is None:
                now = _now()
                cursor = conn.execute(
                    "INSERT INTO prs (repo, head, head_repo, base, title, body, state, draft, "
                    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?, ?)",
                    (self.upstream, head, self.fork, base, title, body, int(draft), now, now),
                )
                row = self._row(conn, int(cursor.lastrowid or 0))
                if on_number is not None:
                    on_number(int(row["number"]))
            return self._pr(row)

    def verify_pr(self, number: int, head: str, base: str, *,
                  head_sha: str | None = None) -> PullRequest:
        """The local forge always opens from the fork: the PR as stored."""
        return self.get_pr(number)

    def issue_state(self, issue: int) -> str:
        """The local forge keeps no issues."""
        return ""

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        with self._write() as conn:
            row = self._row(conn, number)
            conn.execute("UPDATE prs SET title = ?, body = ?, draft = ?, updated_at = ? "
                         "WHERE number = ?",
                         (title, body, row["draft"] if draft is None else int(draft), _now(), number))
            return self._pr(self._row(conn, number))

    def link_issues(self, number: int, issues: Sequence[int]) -> None:
        with self._write() as conn:
            self._row(conn, number)
            conn.executemany("INSERT OR IGNORE INTO pr_issues (pr, issue) VALUES (?, ?)",
                             [(number, int(issue)) for issue in issues])

    def linked_issues(self, number: int) -> list[int]:
        with self._read() as conn:
            conn = self._holding(conn, number)
            return [r[0] for r in conn.execute(
                "SELECT issue FROM pr_issues WHERE pr = ? ORDER BY issue", (number,))]

    def add_comment(self, number: int, body: str) -> None:
        with self._write() as conn:
            self._row(conn, number)
            conn.execute("INSERT INTO comments (pr, body, created_at, author) "
                         "VALUES (?, ?, ?, ?)", (number, body, _now(), self._writer()))

    def decorate(self, number: int, *, labels: tuple[str, ...] = (),
                 assignees: tuple[str, ...] = (), reviewers: tuple[str, ...] = (),
                 testers: tuple[str, ...] = ()) -> None:
        with self._write() as conn:
            self._row(conn, number)
            for role, names in (("label", labels), ("assignee", assignees),
                                ("reviewer", reviewers), ("tester", testers)):
                conn.executemany("INSERT OR IGNORE INTO pr_people (pr, role, name) VALUES (?, ?, ?)",
                                 [(number, role, n) for n in names])

    def has_pr(self, number: int) -> bool:
        """Whether this forge holds PR ``number`` of its upstream."""
        with self._read() as conn:
            return conn is not None and conn.execute(
                "SELECT 1 FROM prs WHERE repo = ? AND number = ?",
                (self.upstream, int(number))).fetchone() is not None

    def add_source_pr(self, *, head: str, base: str, title: str, body: str, author: str,
                      state: str = "merged", head_sha: str = "", merge_commit: str = "",
                      issues: tuple[int, ...] = (), files: tuple[PrFile, ...] = (),
                      number: int | None = None, merged_at: str = "") -> int:
        """Record someone's PR on the upstream itself (head branch in the upstream), as a
        maintainer's merged change is, with the files it changes; returns its number (the
        next one, or ``number``: a real PR learned from its squash commit, after which this
        forge numbers on from there). A merged one is merged at ``merged_at`` (ISO 8601),
        else now."""
        if state not in STATES:
            raise BackportError("usage", f"PR state {state!r} is not one of {', '.join(STATES)}.")
        with self._write() as conn:
            if number is not None and conn.execute("SELECT 1 FROM prs WHERE number = ?",
                                                   (int(number),)).fetchone() is not None:
                raise BackportError("usage", f"The local forge {self.path} already has PR "
                                             f"!{number}.")
            now = _now()
            when = merged_at or now
            cursor = conn.execute(
                "INSERT INTO prs (number, repo, head, head_repo, base, title, body, state, draft, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (number, self.upstream, head, self.upstream, base, title, body, state, when, now))
            number = int(cursor.lastrowid or 0)
            conn.execute("INSERT INTO pr_sources (pr, head_sha, merge_commit, author) "
                         "VALUES (?, ?, ?, ?)", (number, head_sha, merge_commit, author))
            conn.executemany("INSERT OR IGNORE INTO pr_issues (pr, issue) VALUES (?, ?)",
                             [(number, int(i)) for i in issues])
            conn.executemany("INSERT INTO pr_files (pr, seq, old_path, new_path) "
                             "VALUES (?, ?, ?, ?)",
                             [(number, seq, f.old or "", f.new or "")
                              for seq, f in enumerate(files)])
            if state == "merged":
                conn.execute("INSERT INTO pr_merged (pr, merged_at) VALUES (?, ?)", (number, when))
            return number

    def comments(self, number: int) -> list[str]:
        """Bodies of the PR's comments, oldest first."""
        with self._read() as conn:
            conn = self._holding(conn, number)
            return [r[0] for r in conn.execute(
                "SELECT body FROM comments WHERE pr = ? ORDER BY id", (number,))]

    def decorations(self, number: int) -> dict[str, list[str]]:
        """``{"label": [...], "assignee": [...], "reviewer": [...], "tester": [...]}``."""
        result: dict[str, list[str]] = {"label": [], "assignee": [], "reviewer": [], "tester": []}
        with self._read() as conn:
            conn = self._holding(conn, number)
            for role, name in conn.execute(
                    "SELECT role, name FROM pr_people WHERE pr = ? ORDER BY role, name", (number,)):
                result.setdefault(role, []).append(name)
        return result

    # ------------------------------------------------------------------ comments, permissions
    def list_comments(self, number: int) -> list[Comment]:
        with self._read() as conn:
            conn = self._holding(conn, number)
            keys = {r[1] for r in conn.execute("PRAGMA table_info(comments)")}
            author = "author" if "author" in keys else "''"
            return [Comment(id=str(r["id"]), body=r["body"], created_at=r["created_at"],
                            author=r["author"])
                    for r in conn.execute(f"SELECT id, body, created_at, {author} AS author "
                                          "FROM comments WHERE pr = ? ORDER BY id", (number,))]

    def post_comment(self, number: int, body: str) -> Comment:
        with self._write() as conn:
            self._row(conn, number)
            now = _now()
            cursor = conn.execute("INSERT INTO comments (pr, body, created_at, author) "
                                  "VALUES (?, ?, ?, ?)", (number, body, now, self._writer()))
            return Comment(id=str(cursor.lastrowid), body=body, created_at=now)

    def edit_comment(self, number: int, comment_id: str, body: str) -> Comment:
        with self._write() as conn:
            row = conn.execute("SELECT created_at FROM comments WHERE pr = ? AND id = ?",
                               (number, int(comment_id))).fetchone()
            if row is None:
                raise BackportError("forge", f"The local forge {self.path} has no comment "
                                             f"{comment_id} on PR !{number}.")
            conn.execute("UPDATE comments SET body = ? WHERE id = ?", (body, int(comment_id)))
            return Comment(id=comment_id, body=body, created_at=row["created_at"])

    def delete_comment(self, number: int, comment_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM comments WHERE pr = ? AND id = ?", (number, int(comment_id)))

    def permission(self, login: str) -> str:
        """What :meth:`set_permission` recorded for ``login``; ``none`` otherwise."""
        with self._read() as conn:
            if conn is None:
                return "none"
            try:
                row = conn.execute("SELECT permission FROM collaborators WHERE repo = ? AND "
                                   "login = ?", (self.upstream, login)).fetchone()
            except sqlite3.OperationalError:  # a database written before collaborators existed
                return "none"
            return row[0] if row is not None else "none"

    def collaborators(self) -> dict[str, bool]:
        """Every login :meth:`set_permission` recorded, with whether it may write."""
        with self._read() as conn:
            if conn is None:
                return {}
            try:
                rows = conn.execute("SELECT login, permission FROM collaborators WHERE repo = ?",
                                    (self.upstream,)).fetchall()
            except sqlite3.OperationalError:  # a database written before collaborators existed
                return {}
            return {row[0]: row[1] in WRITE_PERMISSIONS for row in rows}

    def set_permission(self, login: str, permission: str) -> None:
        """Make ``login`` a collaborator of the upstream with ``permission`` (local-only)."""
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO collaborators (repo, login, permission) "
                         "VALUES (?, ?, ?)", (self.upstream, login, permission))
