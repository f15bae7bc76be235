"""Byte fidelity: a series exported by `backport new` and applied to its own parent reproduces the
source commit exactly (CRLF, no final newline, binary, modes, renames)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backport.config.patchfiles import read_patch
from backport.git.apply import apply_series
from backport.git.cache import RepoCache
from backport.git.patch_export import export_patch_set
from backport.git.worktree import Worktree
from tests.helpers import gitrepos as gr

TEXT = "".join(f"line {i}\n" for i in range(1, 31))
BINARY = bytes(range(256)) * 4


def _write(repo: Path, rel: str, data: bytes) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _commit(repo: Path, message: str) -> str:
    gr.git(repo, "add", "-A")
    gr.git(repo, "commit", "--quiet", "-m", message)
    return gr.git(repo, "rev-parse", "HEAD")


@pytest.fixture()
def source(tmp_path: Path) -> tuple[Path, str]:
    """An upstream whose master holds one commit of every kind of change git am can lose."""
    work = gr.make_repo(tmp_path / "work")
    gr.git(work, "config", "core.autocrlf", "false")
    _write(work, "test/crlf.py", TEXT.replace("\n", "\r\n").encode())
    _write(work, "test/mixed.py", b"a\r\nb\nc\r\n")
    _write(work, "test/nonl.py", b"first\nsecond")
    _write(work, "test/data.bin", BINARY)
    _write(work, "test/run.sh", b"#!/bin/sh\necho hi\n")
    _write(work, "test/old_name.py", TEXT.encode())
    _commit(work, "base")
    _write(work, "test/crlf.py",
           TEXT.replace("line 15\n", "line 15 changed\n").replace("\n", "\r\n").encode())
    _write(work, "test/mixed.py", b"a\r\nb changed\nc\r\nd\r\n")
    _write(work, "test/nonl.py", b"first\nsecond, still no newline")
    _write(work, "test/data.bin", BINARY[::-1])
    _write(work, "test/new.bin", b"\x00\x01\x02\r\n\xff")
    _write(work, "test/new_crlf.py", b"x = 1\r\ny = 2\r\n")
    os.chmod(work / "test/run.sh", 0o755)
    os.rename(work / "test/old_name.py", work / "test/new_name.py")
    _write(work, "test/new_name.py", TEXT.replace("line 30\n", "line 30 renamed\n").encode())
    sha = _commit(work, "test: every kind of change\n\nBody line.\r\nwith a CR.")
    return work, sha


def test_series_on_its_parent_reproduces_the_commit(tmp_path: Path,
                                                      source: tuple[Path, str]) -> None:
    work, sha = source
    patches = export_patch_set(work, sha, tmp_path / "patches", force=False)
    text = patches[0].read_bytes()
    assert b"GIT binary patch" in text and b"rename from test/old_name.py" in text
    upstream = gr.make_bare(tmp_path / "up.git")
    gr.git(work, "push", "--quiet", str(upstream), f"{sha}~1:refs/heads/master")
    cache = RepoCache(tmp_path / "cache", str(upstream))
    base = cache.fetch(["master"])["master"]
    wt = Worktree.create(cache, tmp_path / "wt", "bp-master", base, ["test"])
    result = apply_series(wt, [read_patch(p) for p in patches])
    assert result.status == "applied", result.message
    assert gr.git(wt.path, "rev-parse", "HEAD^{tree}") == gr.git(work, "rev-parse", f"{sha}^{{tree}}")
    assert gr.git(wt.path, "log", "-1", "--format=%B") == gr.git(work, "log", "-1", "--format=%B", sha)
    assert (wt.path / "test/crlf.py").read_bytes() == (work / "test/crlf.py").read_bytes()


def test_modify_delete_conflict_names_the_file(tmp_path: Path) -> None:
    work = gr.make_repo(tmp_path / "work")
    _write(work, "test/a.py", TEXT.encode())
    _write(work, "test/keep.py", b"keep\n")
    _commit(work, "base")
    gr.git(work, "branch", "old")
    _write(work, "test/a.py", TEXT.replace("line 3\n", "line 3 changed\n").encode())
    sha = _commit(work, "test: change a")
    gr.git(work, "checkout", "--quiet", "old")
    gr.git(work, "rm", "--quiet", "test/a.py")
    _commit(work, "old: drop a")
    patches = export_patch_set(work, sha, tmp_path / "patches", force=False)
    upstream = gr.make_bare(tmp_path / "up.git")
    gr.git(work, "push", "--quiet", str(upstream), "old:refs/heads/old")
    cache = RepoCache(tmp_path / "cache", str(upstream))
    wt = Worktree.create(cache, tmp_path / "wt", "bp-old", cache.fetch(["old"])["old"], ["test"])
    result = apply_series(wt, [read_patch(p) for p in patches])
    assert result.status == "conflict"
    assert result.conflicts == ["test/a.py"], result.conflicts
