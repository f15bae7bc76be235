"""The local forge (SQLite) keeps what the other forges read from the service: comments and
permissions, a merged PR's landed commit and files, its user."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.forge import PrFile
from backport.forge.local import LocalForge
from tests.fakes.forge import FORK, UPSTREAM, set_state

SHA = "1292bcfa165ef69dd3cc3169ec4b1ac51a3b042f"


def test_local_forge_comments_and_permissions(local: LocalForge):
    number = local.add_source_pr(head="feature", base="master", title="t", body="b", author="x")
    first = local.post_comment(number, "one")
    second = local.post_comment(number, "two")
    assert [c.body for c in local.list_comments(number)] == ["one", "two"]
    assert local.edit_comment(number, first.id, "uno").body == "uno"
    local.delete_comment(number, second.id)
    assert [(c.id, c.body) for c in local.list_comments(number)] == [(first.id, "uno")]
    assert local.permission("someone") == "none"
    with contextlib.closing(sqlite3.connect(local.path)) as conn, conn:
        conn.execute("INSERT INTO collaborators VALUES (?, 'someone', 'write')", (UPSTREAM,))
    assert local.permission("someone") == "write"


def test_the_local_forge_keeps_what_a_merged_pr_landed(tmp_path: Path) -> None:
    forge = LocalForge(tmp_path / "forge.sqlite", upstream=UPSTREAM, fork=FORK)
    number = forge.add_source_pr(head="topic", base="master", title="t", body="b",
                                 author="lgxxx", merge_commit=SHA, issues=(3216,))
    info = forge.get_source_pr(number)
    assert (info.state, info.merge_commit_sha, info.author, info.issues) == (
        "merged", SHA, "lgxxx", (3216,))
    own = forge.create_pr("test-x-master", "master", "t", "b")  # one this tool opened
    assert forge.get_source_pr(own.number).merge_commit_sha == ""


def test_the_local_forge_reads_a_database_older_than_its_source_table(tmp_path: Path) -> None:
    db = tmp_path / "forge.sqlite"
    forge = LocalForge(db, upstream=UPSTREAM, fork=FORK)
    number = forge.create_pr("topic", "master", "t", "b").number
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE pr_sources")
    info = forge.get_source_pr(number)
    assert (info.number, info.state, info.merge_commit_sha) == (number, "open", "")


def test_the_local_forge_knows_its_user(tmp_path: Path) -> None:
    path = tmp_path / "forge.sqlite"
    assert LocalForge(path, upstream="Ascend/pytorch", fork="", user="li-lei").fork == \
        "li-lei/pytorch"
    assert LocalForge(path, upstream="Ascend/pytorch", fork="org/pytorch").current_user() == "org"
    nobody = LocalForge(path, upstream="Ascend/pytorch", fork="")
    assert nobody.missing() and "BACKPORT_LOCAL_USER" in nobody.missing()[0]
    with pytest.raises(BackportError, match="no user for the local forge"):
        nobody.current_user()


def test_the_local_forge_keeps_a_source_prs_files_and_merge_time(tmp_path: Path) -> None:
    forge = LocalForge(tmp_path / "forge.sqlite", upstream=UPSTREAM, fork=FORK)
    files = (PrFile(None, "test/test_new.py"), PrFile("test/a.py", "test/b.py"))
    number = forge.add_source_pr(head="topic", base="master", title="t", body="b",
                                 author="maint", files=files)
    assert forge.pr_files(number) == list(files)
    assert forge.get_source_pr(number).merged_at != ""
    opened = forge.add_source_pr(head="later", base="master", title="t", body="b",
                                 author="maint", state="open")
    assert forge.get_source_pr(opened).merged_at == ""
    set_state(forge, opened, "merged")
    assert forge.get_source_pr(opened).merged_at != ""
    own = forge.create_pr("test-x-v2.7.1", "v2.7.1", "t", "b")
    assert forge.pr_files(own.number) == []
    later = {p.number: p.author for p in forge.later_prs(0, "master")}
    assert later == {number: "maint", opened: "maint"}
    assert [p.author for p in forge.later_prs(0, "v2.7.1")] == ["lgxxx"]  # the fork's owner


def test_a_pr_learned_from_history_keeps_its_real_number_and_merge_time(local: LocalForge):
    merged_at = "2026-08-21T23:23:02+08:00"  # the squash commit's committer date
    assert not local.has_pr(42893)
    number = local.add_source_pr(number=42893, merged_at=merged_at, head="is-conj",
                                 base="master", title="[master] test: is_conj", body="b",
                                 author="someone", files=(PrFile(None, "test/test_conj.py"),))
    assert number == 42893 and local.has_pr(42893)
    info = local.get_source_pr(42893)
    assert (info.number, info.state, info.merged_at, info.base, info.head) == (
        42893, "merged", merged_at, "master", "is-conj")
    assert local.pr_files(42893) == [PrFile(None, "test/test_conj.py")]
    # the PRs this tool opens afterwards are later ones, as on GitCode
    assert local.create_pr("test-x-v2.7.1", "v2.7.1", "t", "b").number > 42893
    with pytest.raises(BackportError) as again:
        local.add_source_pr(number=42893, head="h", base="master", title="t", body="b",
                            author="x")
    assert "already has PR !42893" in again.value.message
