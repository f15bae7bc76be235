"""The SQLite local forge: URLs and numbering, read-only reads, a private file, upstreams apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.forge.local import LocalForge, copy_database
from tests.fakes.forge import BASE, BRANCH, FORK, UPSTREAM, set_state


def test_url_and_numbering(local: LocalForge) -> None:
    first = local.create_pr(BRANCH, BASE, "t", "b")
    second = local.create_pr(BRANCH, "master", "t", "b")
    assert first.url == f"local://{UPSTREAM}/pull/{first.number}"
    assert second.number == first.number + 1


def test_reads_do_not_create_the_database(local: LocalForge) -> None:
    assert local.find_open_pr(BRANCH, BASE) is None
    assert local.list_prs("all") == []
    local.preflight()
    assert not local.path.exists()
    with pytest.raises(BackportError):
        local.get_pr(1)
    assert not local.path.exists()


def test_database_file_is_private(local: LocalForge) -> None:
    local.create_pr(BRANCH, BASE, "t", "b")
    assert local.path.stat().st_mode & 0o077 == 0


def test_other_upstream_in_the_same_file_is_separate(local: LocalForge) -> None:
    pr = local.create_pr(BRANCH, BASE, "t", "b")
    other = LocalForge(local.path, upstream="Other/repo", fork=FORK)
    assert other.find_open_pr(BRANCH, BASE) is None
    with pytest.raises(BackportError):
        other.get_pr(pr.number)


def test_a_pr_the_web_merged_reads_merged_and_extras(local: LocalForge) -> None:
    pr = local.create_pr(BRANCH, BASE, "t", "b", draft=True)
    assert pr.draft
    assert set_state(local, pr.number, "merged").state == "merged"
    assert local.find_open_pr(BRANCH, BASE) is None
    with pytest.raises(BackportError):
        local.link_issues(999, [1])


def test_a_file_that_is_not_a_database_is_named_in_one_sentence(tmp_path: Path) -> None:
    """A read, a write and a dry run's copy each name the file; none ends in a traceback."""
    path = tmp_path / "forge.sqlite"
    path.write_text("not a database\n" * 100)
    forge = LocalForge(path, upstream="Ascend/pytorch", fork="lgxxx/pytorch")
    for attempt in (lambda: forge.find_open_pr("test-x", "master"),
                    lambda: forge.post_comment(1, "hello"),
                    lambda: copy_database(path, tmp_path)):
        with pytest.raises(BackportError) as caught:
            attempt()
        assert str(path) in str(caught.value) and "not a database" in str(caught.value)
    assert path.read_text() == "not a database\n" * 100
