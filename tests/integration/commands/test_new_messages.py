"""`backport new` says which repository it read, what it needs, and never mentions a journal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.helpers.project import git, run_app, run_cli
from tests.helpers.upstream import PLAIN, commit_test


def test_a_commit_missing_from_the_current_folder_suggests_repo(sandbox):
    git(sandbox.project, "init", "--quiet")
    result = run_app(sandbox.project, "new", "made", "--from", "94607eabb", "--api", "a.b",
                     "--issue", "1")
    assert result.code == 2
    line = result.err.strip()
    assert line.startswith("error: revision '94607eabb' is not a commit in the repository "
                           f"{sandbox.project} (the current folder)"), line
    assert "pass --repo" in line and "\n" not in line
    assert not (sandbox.project / "patches" / "made").exists()


def test_a_folder_that_is_no_repository_is_named(sandbox, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run_app(sandbox.project, "new", "made", "--from", "HEAD", "--repo", str(plain),
                     "--api", "a.b", "--issue", "1")
    assert result.code == 2
    assert f"{plain} is not a git repository" in result.err
    assert "pass --repo" not in result.err  # it was given


def test_help_says_api_and_issue_are_required_off_a_terminal(sandbox, tmp_path):
    repo = commit_test(tmp_path, "test/test_plain.py", PLAIN)
    text = " ".join(run_app(sandbox.project, "new", "--help").out.split()).split("Options:")[1]
    for option in ("--api", "--issue"):
        part = text.split(option, 1)[1][:120]
        assert "required off a terminal" in part, part
    result = run_app(sandbox.project, "new", "made", "--from", "HEAD", "--repo", str(repo),
                     "--issue", "3")
    assert result.code == 2
    assert "--api is required off a terminal" in result.err


def test_end_of_input_at_the_prompt_names_the_option_not_a_journal(sandbox, tmp_path):
    repo = commit_test(tmp_path, "test/test_plain.py", PLAIN)
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "backport", "new", "made", "--from", "HEAD",
                                 "--repo", str(repo), "--issue", "3"], cwd=sandbox.project,
                                stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        os.write(leader, b"\x04")  # Ctrl-D on an empty line: end of input
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    assert proc.returncode == 2, err
    assert "journal" not in err and "resume" not in err
    assert "input ended at the --api prompt" in err
    assert not (sandbox.project / "patches" / "made").exists()
    assert not list((sandbox.project / "patches").glob(".new-*"))


def test_new_still_writes_a_patch_set(sandbox, tmp_path):
    repo = commit_test(tmp_path, "test/test_plain.py", PLAIN)
    result = run_cli(sandbox.project, "new", "made", "--from", "HEAD", "--repo", str(repo),
                     "--api", "a.b", "--issue", "3")
    assert result.code == 0, result.err
    assert Path(sandbox.project / "patches" / "made" / "patch.yaml").is_file()


def test_without_api_and_issue_off_a_terminal_both_are_named(sandbox, tmp_path):
    repo = commit_test(tmp_path, "test/test_plain.py", PLAIN)
    result = run_app(sandbox.project, "new", "made", "--from", "HEAD", "--repo", str(repo))
    assert result.code == 2
    assert "--api and --issue are required off a terminal" in result.err
    assert not (sandbox.project / "patches" / "made").exists()


def test_a_current_folder_that_is_no_repository_points_at_repo(sandbox):
    result = run_app(sandbox.project, "new", "made", "--from", "HEAD", "--api", "a.b",
                     "--issue", "1")
    assert result.code == 2
    line = result.err.strip()
    assert "is not a git repository" in line and "(the current folder)" in line, line
    assert "pass --repo PATH" in line and "\n" not in line
