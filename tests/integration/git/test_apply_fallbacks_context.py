"""A series applied with its context lines ignored, only where each change has one certain place."""

from __future__ import annotations

from pathlib import Path

from backport.config.patchfiles import read_patch
from backport.git.apply import abort_series, am_in_progress, apply_series
from backport.git.apply_fallbacks import apply_ignoring_context
from backport.git.worktree import Worktree
from tests.helpers import gitrepos as gr

FILE = "test/unsupported_test_cases/disabled.json"
BEFORE = ["{", '  "a": 1,', '  "b": 2,', '  "gone_1": 3,', '  "gone_2": 4,', '  "c": 5,',
          '  "d": 6', "}"]
AFTER = [line for line in BEFORE if "gone" not in line]


def text(lines: list[str], end: str = "\n") -> str:
    return "".join(line + end for line in lines)


def world(tmp_path: Path, branch_lines: list[str], *, end: str = "\n",
          source_lines: list[str] = BEFORE, result_lines: list[str] = AFTER
          ) -> tuple[Worktree, Path]:
    """A repository whose ``source`` branch removes two lines (the patch) and whose
    ``target`` branch has ``branch_lines``; returns the target checked out and the patch."""
    repo = gr.make_repo(tmp_path / "repo")
    gr.commit_files(repo, {FILE: text(source_lines, end), "README": "r\n"}, "start")
    gr.git(repo, "branch", "target")
    gr.commit_files(repo, {FILE: text(result_lines, end)}, "drop the gone entries")
    [patch] = gr.format_patch(repo, "HEAD~1..HEAD", tmp_path / "patches")
    gr.git(repo, "checkout", "--quiet", "target")
    gr.commit_files(repo, {FILE: text(branch_lines, end)}, "the branch's own edits")
    return Worktree.open(repo), patch


def test_a_change_whose_neighbour_differs_goes_in_with_its_context_ignored(tmp_path):
    # The branch changed the line right before the removed ones: the 3-way merge conflicts.
    mine = [line.replace('"b": 2', '"b": 20') for line in BEFORE]
    wt, patch = world(tmp_path, mine)
    base = wt.head()
    assert apply_series(wt, [read_patch(patch)]).status == "conflict"
    abort_series(wt)
    result = apply_ignoring_context(wt, [read_patch(patch)])
    assert result.status == "applied", result.message
    assert result.context_ignored == [FILE]
    assert (wt.path / FILE).read_text() == text([line for line in mine if "gone" not in line])
    assert gr.git(wt.path, "rev-list", "--count", f"{base}..HEAD") == "1"
    assert gr.git(wt.path, "log", "-1", "--format=%s") == "drop the gone entries"


def test_a_change_found_twice_is_refused_and_nothing_is_left_behind(tmp_path):
    # The removed lines exist twice on the branch (neither copy with the patch's context).
    mine = ["{", '  "x": 0,', '  "gone_1": 3,', '  "gone_2": 4,', '  "y": 0,',
            '  "gone_1": 3,', '  "gone_2": 4,', '  "z": 0', "}"]
    wt, patch = world(tmp_path, mine)
    base = wt.head()
    result = apply_ignoring_context(wt, [read_patch(patch)])
    assert result.status == "conflict" and "one certain place" in result.message
    assert wt.head() == base and not am_in_progress(wt)
    assert (wt.path / FILE).read_text() == text(mine)
    assert gr.git(wt.path, "status", "--porcelain") == ""


def test_a_hunk_that_only_adds_lines_needs_its_context(tmp_path):
    added = BEFORE[:3] + ['  "new": 7,'] + BEFORE[3:]
    mine = [line.replace('"b": 2', '"b": 20') for line in BEFORE]
    wt, patch = world(tmp_path, mine, result_lines=added)
    base = wt.head()
    assert apply_ignoring_context(wt, [read_patch(patch)]).status == "conflict"
    assert wt.head() == base and not am_in_progress(wt)


def test_crlf_lines_keep_their_cr(tmp_path):
    mine = [line.replace('"c": 5', '"c": 50') for line in BEFORE]
    wt, patch = world(tmp_path, mine, end="\r\n")
    result = apply_ignoring_context(wt, [read_patch(patch)])
    assert result.status == "applied", result.message
    assert (wt.path / FILE).read_bytes() == text(
        [line for line in mine if "gone" not in line], "\r\n").encode()


def test_a_file_whose_hunks_all_match_is_not_called_loose(tmp_path):
    wt, patch = world(tmp_path, BEFORE + ["// a line of the branch's own"])
    result = apply_ignoring_context(wt, [read_patch(patch)])
    assert result.status == "applied" and result.context_ignored == []


def test_the_loaded_bytes_are_applied_not_the_file_on_disk(tmp_path):
    mine = [line.replace('"b": 2', '"b": 20') for line in BEFORE]
    wt, patch = world(tmp_path, mine)
    loaded = read_patch(patch)
    patch.unlink()  # the file is gone once loaded; git am gets the bytes that were checked
    result = apply_ignoring_context(wt, [loaded])
    assert result.status == "applied", result.message
    assert (wt.path / FILE).read_text() == text([line for line in mine if "gone" not in line])
