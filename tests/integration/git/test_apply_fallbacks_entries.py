"""`git am -3` finished by merging JSON lists entry by entry, on real repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from backport.config.patchfiles import read_patch
from backport.git.apply import am_in_progress, apply_series
from backport.git.apply_fallbacks import finish_by_entries, merge_entries
from backport.git.worktree import Worktree
from tests.helpers import gitrepos as gr
from tests.helpers.torch_npu_files import FILE, doc


def line_merge_conflicts(base: bytes, ours: bytes, theirs: bytes, tmp: Path) -> bool:
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp / name).write_bytes(data)
    proc = subprocess.run(["git", "merge-file", "-p", str(tmp / "ours"), str(tmp / "base"),
                           str(tmp / "theirs")], capture_output=True, check=False)
    return proc.returncode != 0


def test_removed_entries_next_to_the_branchs_own_go_entry_by_entry(tmp_path):
    base = doc("a", "gone_1", "gone_2", "z")
    theirs = doc("a", "z")
    ours = doc("a", "own", "gone_1", "gone_2")  # z missing, own added: a line merge conflicts
    assert line_merge_conflicts(base, ours, theirs, tmp_path)
    merged = merge_entries(base, ours, theirs)
    assert merged == doc("a", "own")
    assert json.loads(merged) == {"a": ["", [""]], "own": ["", [""]]}










def test_git_am_stopped_on_such_a_file_is_finished_entry_by_entry(tmp_path):
    repo = gr.make_repo(tmp_path / "repo")
    gr.commit_files(repo, {FILE: doc("a", "gone_1", "gone_2", "z").decode(),
                           "other.py": "x = 1\n"}, "start")
    gr.git(repo, "branch", "target")
    gr.commit_files(repo, {FILE: doc("a", "z").decode(), "other.py": "x = 2\n"},
                    "drop the gone entries")
    [patch] = gr.format_patch(repo, "HEAD~1..HEAD", tmp_path / "patches")
    gr.git(repo, "checkout", "--quiet", "target")
    gr.commit_files(repo, {FILE: doc("a", "own", "gone_1", "gone_2").decode()}, "its own")
    wt = Worktree.open(repo)
    stopped = apply_series(wt, [read_patch(patch)])
    assert stopped.status == "conflict" and stopped.conflicts == [FILE]
    result = finish_by_entries(wt, stopped)
    assert result.status == "applied", result.message
    assert result.merged == [FILE] and not am_in_progress(wt)
    assert (repo / FILE).read_bytes() == doc("a", "own")
    assert (repo / "other.py").read_text() == "x = 2\n"
    assert gr.git(repo, "log", "-1", "--format=%s") == "drop the gone entries"
    assert gr.git(repo, "status", "--porcelain") == ""


def test_a_conflict_elsewhere_is_left_as_it_was(tmp_path):
    repo = gr.make_repo(tmp_path / "repo")
    gr.commit_files(repo, {"a.py": "x = 1\n"}, "start")
    gr.git(repo, "branch", "target")
    gr.commit_files(repo, {"a.py": "x = 2\n"}, "change")
    [patch] = gr.format_patch(repo, "HEAD~1..HEAD", tmp_path / "patches")
    gr.git(repo, "checkout", "--quiet", "target")
    gr.commit_files(repo, {"a.py": "x = 3\n"}, "its own")
    wt = Worktree.open(repo)
    stopped = apply_series(wt, [read_patch(patch)])
    assert finish_by_entries(wt, stopped) is stopped and am_in_progress(wt)
