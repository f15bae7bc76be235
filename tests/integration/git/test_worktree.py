"""Sparse worktrees from the blobless cache."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.git.cache import RepoCache
from backport.git.worktree import Worktree
from tests.helpers import gitrepos as gr
from tests.integration.git.conftest import BASE, SHIFTED, TEST_FILE, Scenario


def files_in(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def test_sparse_worktree_materializes_only_listed_paths(
    cache: RepoCache, scenario: Scenario, tmp_path: Path
) -> None:
    head = cache.fetch(["v2.7.1"])["v2.7.1"]
    wt = Worktree.create(cache, tmp_path / "wt", "bp-v2.7.1", head, [TEST_FILE, "README.md"])
    assert files_in(wt.path) == {TEST_FILE, "README.md"}
    assert (wt.path / TEST_FILE).read_text() == SHIFTED
    assert wt.head() == head and wt.branch == "bp-v2.7.1"
    assert gr.git(wt.path, "status", "--porcelain") == ""
    # Only the materialized blobs were fetched, not the whole tree.
    assert gr.count_objects(cache.path, "blob") == 2


def test_full_worktree_without_sparse_paths(cache: RepoCache, tmp_path: Path) -> None:
    head = cache.fetch(["master"])["master"]
    wt = Worktree.create(cache, tmp_path / "wt", "bp-master", head, None)
    assert TEST_FILE in files_in(wt.path) and "torch_npu/big.py" in files_in(wt.path)
    assert (wt.path / TEST_FILE).read_text() == BASE


def test_create_replaces_stale_worktree_and_branch(cache: RepoCache, tmp_path: Path) -> None:
    heads = cache.fetch(["master", "v2.11.0"])
    path = tmp_path / "wt"
    old = Worktree.create(cache, path, "bp", heads["master"], [TEST_FILE])
    (old.path / TEST_FILE).write_text("local edits\n")
    (old.path / "junk.txt").write_text("junk\n")
    new = Worktree.create(cache, path, "bp", heads["v2.11.0"], [TEST_FILE])
    assert new.head() == heads["v2.11.0"]
    assert (new.path / TEST_FILE).read_text() == BASE
    assert not (new.path / "junk.txt").exists()
    # A directory left behind without registration is replaced too.
    gr.git(cache.path, "worktree", "remove", "--force", str(path))
    path.mkdir()
    (path / ".git").write_text("gitdir: /nonexistent\n")
    again = Worktree.create(cache, path, "bp", heads["master"], [TEST_FILE])
    assert again.head() == heads["master"]


def test_create_refuses_foreign_directory(cache: RepoCache, tmp_path: Path) -> None:
    head = cache.fetch(["master"])["master"]
    path = tmp_path / "mine"
    path.mkdir()
    (path / "precious.txt").write_text("keep me\n")
    with pytest.raises(BackportError):
        Worktree.create(cache, path, "bp", head, [TEST_FILE])
    assert (path / "precious.txt").read_text() == "keep me\n"


def test_open_and_remove(cache: RepoCache, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    head = cache.fetch(["master"])["master"]
    wt = Worktree.create(cache, tmp_path / "wt", "bp-master", head, [TEST_FILE])
    with monkeypatch.context() as no_git:  # a linked worktree is read from git's files
        no_git.setenv("PATH", str(tmp_path / "no-programs"))
        opened = Worktree.open(tmp_path / "wt")
    assert opened.path == wt.path and opened.branch == "bp-master"
    assert opened.repo.resolve() == cache.path.resolve()
    gr.git(wt.path, "checkout", "--quiet", "--detach")
    assert Worktree.open(tmp_path / "wt").branch is None
    gr.git(wt.path, "checkout", "--quiet", "bp-master")
    opened.remove()
    assert not wt.path.exists()
    assert "bp-master" not in gr.branches_of(cache.path)
    assert str(wt.path) not in gr.git(cache.path, "worktree", "list")
    with pytest.raises(BackportError):
        Worktree.open(tmp_path / "wt")


def test_open_rejects_non_worktree(tmp_path: Path) -> None:
    inner = gr.make_repo(tmp_path / "repo") / "sub"
    inner.mkdir()
    with pytest.raises(BackportError):
        Worktree.open(inner)


def test_bad_branch_names_rejected(cache: RepoCache, tmp_path: Path) -> None:
    head = cache.fetch(["master"])["master"]
    for name in ("-b", "--orphan", "a b", "x..y"):
        with pytest.raises(BackportError) as info:
            Worktree.create(cache, tmp_path / "wt", name, head, [TEST_FILE])
        assert info.value.code == "usage"




def test_worktrees_created_from_threads(cache: RepoCache, scenario: Scenario, tmp_path: Path) -> None:
    targets = ["master", "v2.7.1", "v2.11.0", "v2.12.0"]

    def work(target: str) -> Worktree:
        head = cache.fetch([target])[target]
        return Worktree.create(cache, tmp_path / "wt" / target, f"bp-{target}", head, [TEST_FILE])

    made, errors = gr.run_in_threads(work, targets)
    assert errors == []
    for target in targets:
        assert made[target].head() == scenario.heads[target]
        assert files_in(made[target].path) == {TEST_FILE}


def test_remove_waits_for_the_cache_lock(cache: RepoCache, tmp_path: Path) -> None:
    # Removing a worktree rewrites the cache's worktree registry, as creating one does: it must
    # not run while another thread or process holds the cache (a branch of the same run
    # creating its worktree would find the registry changing under it).
    head = cache.fetch(["master"])["master"]
    wt = Worktree.create(cache, tmp_path / "a" / "master", "bp-a", head, [TEST_FILE])
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, sys\n"
         "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX)\n"
         "print('held', flush=True); sys.stdin.read()\n",
         str(cache.path.with_name(cache.path.name + ".lock"))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        remover = threading.Thread(target=wt.remove)
        remover.start()
        remover.join(2.0)
        assert remover.is_alive() and wt.path.exists()  # still waiting for the lock
    finally:
        holder.stdin.close()
        holder.wait()
    remover.join(60)
    assert not remover.is_alive() and not wt.path.exists()
    assert "bp-a" not in gr.branches_of(cache.path)


def test_a_worktree_deleted_by_hand_is_replaced_within_the_same_run(
        cache: RepoCache, tmp_path: Path) -> None:
    """The cache is pruned once per run; a registration left stale later (the folder deleted,
    its branch still held) makes the first add fail, and the full clean-up then runs."""
    heads = cache.fetch(["master", "v2.11.0"])
    path = tmp_path / "wt"
    first = Worktree.create(cache, path, "bp", heads["master"], [TEST_FILE])
    assert cache.memo.pruned
    shutil.rmtree(first.path)  # still registered, still holding branch bp
    again = Worktree.create(cache, path, "bp", heads["v2.11.0"], [TEST_FILE])
    assert again.head() == heads["v2.11.0"] and (again.path / TEST_FILE).read_text() == BASE
    shutil.rmtree(again.path)
    again.remove()  # the folder is gone: its registration and branch go all the same
    assert str(path) not in gr.git(cache.path, "worktree", "list", "--porcelain")
    assert gr.git(cache.path, "branch", "--list", "bp") == ""


def test_a_run_reads_a_file_of_a_commit_once_and_a_moving_name_each_time(
        cache: RepoCache, tmp_path: Path) -> None:
    head = cache.fetch(["master"])["master"]
    wt = Worktree.create(cache, tmp_path / "wt", "bp", head, [TEST_FILE])
    assert wt.memo is cache.memo
    blobs = cache.memo.reader(cache.path)
    assert blobs(f"{head}:{TEST_FILE}") == BASE.encode()
    assert cache.memo.has(f"{head}:{TEST_FILE}")
    (wt.path / TEST_FILE).write_text("moved on\n")
    gr.git(wt.path, "commit", "--quiet", "-am", "move")
    assert cache.memo.reader(wt.path)(f"HEAD:{TEST_FILE}") == b"moved on\n"
    assert not cache.memo.has(f"HEAD:{TEST_FILE}")  # a ref moves: never kept
    gr.git(wt.path, "commit", "--quiet", "--amend", "-m", "moved again")
    (wt.path / TEST_FILE).write_text("and again\n")
    gr.git(wt.path, "commit", "--quiet", "-am", "again")
    assert cache.memo.reader(wt.path)(f"HEAD:{TEST_FILE}") == b"and again\n"
