"""The embedded offline forge: PRs in one SQLite file (``.backport/forge.sqlite``).

Used by ``backport demo``, by tests and by teams without a GitCode account. Every write runs
in ``BEGIN IMMEDIATE`` (a create re-checks there for an open PR of the same head and base, and a
partial unique index backs it up), so threads and processes may share it. Reads never create
the file (a dry run leaves the state folder untouched); a connection brings an older file's
tables up to date. :meth:`LocalForge.add_source_pr` records someone's PR on the upstream itself.
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
from backport.forge.base import WRITE_PERMISSIONS, Comment, Forge, PrFile, PullRequest, SourcePrInfo

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

LOCAL_USER_VARIABLE = "BACKPORT_LOCAL_USER"  # the local forge's user, as a token names one


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# A PR row with what add_source_pr recorded of it (NULL for one this tool opened).
PRS = ("SELECT prs.*, s.author AS author, s.merge_commit AS merge_commit, m.merged_at AS merged_at"
       " FROM prs LEFT JOIN pr_sources s ON s.pr = prs.number"
       " LEFT JOIN pr_merged m ON m.pr = prs.number")
OPEN_FROM = "prs.head_repo = ? AND prs.head = ? AND prs.base = ? AND prs.state = 'open'"


def copy_database(source: Path, folder: Path) -> Path:
    """A copy in ``folder`` of the local forge's database at ``source`` (if there is one),
    read in one transaction: what a dry run reads and writes, the file staying as it was."""
    copy = folder / source.name
    if source.exists():
        try:
            original = sqlite3.connect(source.resolve().as_uri() + "?mode=ro", uri=True)
            with contextlib.closing(original), contextlib.closing(sqlite3.connect(copy)) as into:
                original.backup(into)
        except sqlite3.Error as exc:
            raise _failed(source, exc) from None
    return copy


def _failed(path: Path, exc: sqlite3.Error) -> BackportError:
    return BackportError("forge", f"Local forge database {path} failed: {exc}.")


class LocalForge(Forge):
    """PRs in a SQLite database at ``path``. Its user (a token's login on GitCode) is ``user``,
    else the owner of the fork branches.yaml names; the fork follows the user otherwise."""

    name = "local"

    def __init__(self, path: Path, *, upstream: str, fork: str, user: str = "",
                 database: Path | None = None) -> None:
        self.path = Path(path)  # the file a message names and a real run writes
        self.database = Path(database or path)  # a dry run's: a copy (`copy_database`)
        self.upstream = upstream
        self._fork = fork
        self.user = user

    @property
    def fork(self) -> str:
        return self._fork or fork_of(self.upstream, self.current_user())

    def current_user(self) -> str:
        login = self._writer()
        if not login:
            raise BackportError("auth", self.missing()[0])
        return login

    def _writer(self) -> str:
        """Who a comment this forge writes is by ("" when it knows nobody)."""
        return self.user or self._fork.partition("/")[0]

    def _connect(self) -> sqlite3.Connection:
        """A connection to a database whose tables are all there (an older file's updated)."""
        conn = sqlite3.connect(self.database, timeout=60.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.executescript(SCHEMA)
        if "author" not in {r[1] for r in conn.execute("PRAGMA table_info(comments)")}:
            conn.execute("ALTER TABLE comments ADD COLUMN author TEXT NOT NULL DEFAULT ''")
        return conn

    def _query(self, sql: str, *args: object) -> list[sqlite3.Row]:
        """The rows of one read; none while the database does not exist."""
        if not self.database.exists():
            return []
        try:
            with contextlib.closing(self._connect()) as conn:
                return conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise _failed(self.path, exc) from None

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE`` (committed on success, rolled back on error)."""
        created = not self.database.exists()
        self.database.parent.mkdir(parents=True, exist_ok=True)
        try:
            with contextlib.closing(self._connect()) as conn:
                if created:
                    with contextlib.suppress(OSError):
                        os.chmod(self.database, 0o600)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise _failed(self.path, exc) from None

    def _pr(self, row: sqlite3.Row) -> PullRequest:
        """A PR row as a PR; its author the one recorded, else its head repository's owner."""
        return PullRequest(
            number=row["number"], url=f"local://{self.upstream}/pull/{row['number']}",
            title=row["title"], body=row["body"], head=row["head"], head_repo=row["head_repo"],
            base=row["base"], state=row["state"], draft=bool(row["draft"]),
            author=row["author"] or str(row["head_repo"]).partition("/")[0])

    def _rows(self, conn: sqlite3.Connection | None, where: str,
              *args: object) -> list[sqlite3.Row]:
        """The upstream's PR rows ``where`` holds (through ``conn``, else a connection of its
        own), by number."""
        sql = f"{PRS} WHERE prs.repo = ? AND {where} ORDER BY prs.number"
        if conn is not None:
            return conn.execute(sql, (self.upstream, *args)).fetchall()
        return self._query(sql, self.upstream, *args)

    def _prs(self, where: str, *args: object) -> list[PullRequest]:
        return [self._pr(r) for r in self._rows(None, where, *args)]

    def _row(self, conn: sqlite3.Connection | None, number: int) -> sqlite3.Row:
        rows = self._rows(conn, "prs.number = ?", number)
        if not rows:
            raise BackportError("forge", f"The local forge {self.path} has no PR !{number} "
                                         f"in {self.upstream}.")
        return rows[0]

    def missing(self) -> list[str]:
        """Nothing, unless the fork is to follow a user this forge does not know."""
        return [] if self._writer() else [f"no user for the local forge {self.path}: set "
                                          f"{LOCAL_USER_VARIABLE} (the fork follows it) or fork: "
                                          "in branches.yaml"]

    def preflight(self) -> None:
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise BackportError("forge", f"The local forge database {self.path} is not writable.")

    def find_open_pr(self, head: str, base: str) -> PullRequest | None:
        if not self.database.exists():  # nothing to find (and no user asked for)
            return None
        return next(iter(self._prs(OPEN_FROM, self.fork, head, base)), None)

    def get_pr(self, number: int) -> PullRequest:
        return self._pr(self._row(None, number))

    def get_source_pr(self, number: int) -> SourcePrInfo:
        """PR ``number`` with what :meth:`add_source_pr` recorded of its commits."""
        row = self._row(None, number)
        return SourcePrInfo(
            number=number, state=row["state"], title=row["title"], body=row["body"],
            base=row["base"], head=row["head"], merge_commit_sha=row["merge_commit"] or "",
            author=row["author"] or "", issues=tuple(self.linked_issues(number)),
            merged_at=row["merged_at"] or "" if row["state"] == "merged" else "")

    def pr_files(self, number: int) -> list[PrFile]:
        self._row(None, number)
        return [PrFile(r["old_path"] or None, r["new_path"] or None) for r in self._query(
            "SELECT old_path, new_path FROM pr_files WHERE pr = ? ORDER BY seq", number)]

    def list_prs(self, state: str = "open", *, fresh: bool = False) -> list[PullRequest]:
        return self._prs("1") if state == "all" else self._prs("prs.state = ?", state)

    def later_prs(self, number: int, base: str) -> list[PullRequest]:
        return self._prs("prs.base = ? AND prs.number > ? AND prs.state IN ('open', 'merged')",
                         base, int(number))

    def create_pr(self, head: str, base: str, title: str, body: str, *, draft: bool = False,
                  head_sha: str | None = None, close_related_issue: bool | None = None,
                  on_number: Callable[[int], None] | None = None) -> PullRequest:
        with self._write() as conn:
            row = next(iter(self._rows(conn, OPEN_FROM, self.fork, head, base)), None)
            if row is None:
                now = _now()
                cursor = conn.execute(
                    "INSERT INTO prs (repo, head, head_repo, base, title, body, state, draft, "
                    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?, ?)",
                    (self.upstream, head, self.fork, base, title, body, int(draft), now, now))
                row = self._row(conn, int(cursor.lastrowid or 0))
                if on_number is not None:
                    on_number(int(row["number"]))
            return self._pr(row)

    def update_pr(self, number: int, *, title: str, body: str, draft: bool | None = None,
                  close_related_issue: bool | None = None) -> PullRequest:
        with self._write() as conn:
            self._row(conn, number)
            conn.execute("UPDATE prs SET title = ?, body = ?, draft = COALESCE(?, draft), "
                         "updated_at = ? WHERE number = ?", (title, body, draft, _now(), number))
            return self._pr(self._row(conn, number))

    def link_issues(self, number: int, issues: Sequence[int]) -> None:
        with self._write() as conn:
            self._row(conn, number)
            conn.executemany("INSERT OR IGNORE INTO pr_issues (pr, issue) VALUES (?, ?)",
                             [(number, int(issue)) for issue in issues])

    def linked_issues(self, number: int) -> list[int]:
        self._row(None, number)
        return [r[0] for r in self._query("SELECT issue FROM pr_issues WHERE pr = ? "
                                          "ORDER BY issue", number)]

    def decorate(self, number: int, *, labels: tuple[str, ...] = (),
                 assignees: tuple[str, ...] = (), reviewers: tuple[str, ...] = (),
                 testers: tuple[str, ...] = ()) -> None:
        with self._write() as conn:
            self._row(conn, number)
            for role, names in (("label", labels), ("assignee", assignees),
                                ("reviewer", reviewers), ("tester", testers)):
                conn.executemany("INSERT OR IGNORE INTO pr_people (pr, role, name) "
                                 "VALUES (?, ?, ?)", [(number, role, n) for n in names])

    def has_pr(self, number: int) -> bool:
        """Whether this forge holds PR ``number`` of its upstream."""
        return bool(self._rows(None, "prs.number = ?", int(number)))

    def add_source_pr(self, *, head: str, base: str, title: str, body: str, author: str,
                      state: str = "merged", merge_commit: str = "",
                      issues: tuple[int, ...] = (), files: tuple[PrFile, ...] = (),
                      number: int | None = None, merged_at: str = "") -> int:
        """Record someone's PR on the upstream itself with the files it changes; its number
        (the next one, or ``number``). A merged one is merged at ``merged_at``, else now."""
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
            conn.execute("INSERT INTO pr_sources (pr, merge_commit, author) VALUES (?, ?, ?)",
                         (number, merge_commit, author))
            conn.executemany("INSERT OR IGNORE INTO pr_issues (pr, issue) VALUES (?, ?)",
                             [(number, int(i)) for i in issues])
            conn.executemany("INSERT INTO pr_files (pr, seq, old_path, new_path) "
                             "VALUES (?, ?, ?, ?)",
                             [(number, seq, f.old or "", f.new or "")
                              for seq, f in enumerate(files)])
            if state == "merged":
                conn.execute("INSERT INTO pr_merged (pr, merged_at) VALUES (?, ?)", (number, when))
            return number

    def list_comments(self, number: int) -> list[Comment]:
        self._row(None, number)
        return [Comment(id=str(r["id"]), body=r["body"], created_at=r["created_at"],
                        author=r["author"])
                for r in self._query("SELECT id, body, created_at, author FROM comments "
                                     "WHERE pr = ? ORDER BY id", number)]

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
        rows = self._query("SELECT permission FROM collaborators WHERE repo = ? AND login = ?",
                           self.upstream, login)
        return rows[0][0] if rows else "none"

    def collaborators(self) -> dict[str, bool]:
        return {row[0]: row[1] in WRITE_PERMISSIONS for row in self._query(
            "SELECT login, permission FROM collaborators WHERE repo = ?", self.upstream)}
