"""JSON lists of one member per line merged entry by entry, and `git am -3` finished that way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from backport.config.patchfiles import read_patch
from backport.git.apply import am_in_progress, apply_series
from backport.git.entries import finish_by_entries, merge_entries
from backport.git.worktree import Worktree
from tests.helpers import gitrepos as gr
from tests.helpers.entries import FILE, doc


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


def test_an_entry_the_branch_lacks_or_changed_is_refused():
    base, theirs = doc("a", "gone", "z"), doc("a", "z")
    assert merge_entries(base, doc("a", "z"), theirs) is None  # nothing to remove here
    changed = doc("a", "gone", "z").replace(b'"gone": ["", [""]]', b'"gone": ["", ["why"]]')
    assert merge_entries(base, changed, theirs) is None


def test_added_entries_follow_their_neighbour_and_commas_stay_valid():
    base = doc("a", "b")
    theirs = doc("a", "new", "b", "last")
    ours = doc("x", "a")  # b is not here: "last" follows "new", which follows "a"
    merged = merge_entries(base, ours, theirs)
    assert merged == doc("x", "a", "new", "last")
    assert merge_entries(doc("a"), doc("b"), doc("a", "new")) is None  # "a" not here: no place


def test_a_change_both_sides_made_and_text_outside_the_change_are_kept():
    base = b'{\n \t"a": 1,\n  "b": 2\n}\n'
    theirs = b'{\n  "a": 1\n}\n'  # re-indented a, removed b
    ours = b'{\n \t"a": 1,\n  "b": 2,\n  "c": 3\n}\n'
    # The re-indentation is no change of the entry: the branch keeps its own text.
    assert merge_entries(base, ours, theirs) == b'{\n \t"a": 1,\n  "c": 3\n}\n'


def test_duplicated_keys_and_other_layouts_are_refused():
    base = b'{\n  "a": 1,\n  "a": 2,\n  "b": 3\n}\n'
    assert merge_entries(base, base, b'{\n  "a": 1,\n  "b": 3\n}\n') is None
    assert merge_entries(base, base, b'{\n  "a": 1,\n  "a": 2\n}\n') == b'{\n  "a": 1,\n  "a": 2\n}\n'
    nested = b'{\n  "a": [\n    1\n  ]\n}\n'
    assert merge_entries(nested, nested, b'{\n}\n') is None
    assert merge_entries(b"[1]\n", b"[1]\n", b"[]\n") is None


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
