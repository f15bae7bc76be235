"""The pure rules of a merged PR's source: a squash message names one PR (its last trailer), a
commit is the PR's only with exactly its files after its merge (oldest first), and a series
leaves its files as its last change says (renamed: the new path; deleted: none)."""

from __future__ import annotations

from pathlib import Path

from backport.config.patchfiles import FileDiff, Patch
from backport.forge import PrFile
from backport.forge.gitcode_json import pr_file
from backport.git.python_tests import changed_python_tests, left_paths
from backport.git.source_pr import (
    BEFORE_MERGE,
    FILES_DIFFER,
    LATER,
    MERGE_CLOCK_SKEW,
    NamedCommit,
    PassedOver,
    choose,
    describe_passed_over,
    merge_bound,
    same_files,
)
from backport.git.squash_message import squash_names

PR_FILES = frozenset({"test/a/test_x.py"})


def test_a_quoted_merge_line_in_another_prs_squash_names_only_that_pr() -> None:
    # A reader's PR body holding PR 7's merge line, squash-merged as PR 9: PR 9's commit.
    message = ("chore\n\n!9 merge chore into master\n\nDescription: see\n"
               "!7 merge test-x into master\n\nSee merge request: Ascend/pytorch!9")
    assert not squash_names(message, 7)
    assert squash_names(message, 9)
    # Without a trailer the merge line decides (a commit pushed with GitCode's own form).
    assert squash_names("x\n\n!7 merge test-x into master\n", 7)


def test_same_files_is_exact_and_never_empty() -> None:
    assert same_files(PR_FILES, {"test/a/test_x.py"})
    assert not same_files(PR_FILES, {"test/a/test_x.py", "test/test_evil.py"})
    assert not same_files(PR_FILES, set())
    assert not same_files(set(), set())  # a PR listing no file proves nothing
    renamed = PrFile("test/a/test_x.py", "test/a/test_y.py")
    assert same_files(renamed.paths, {"test/a/test_x.py", "test/a/test_y.py"})
    assert PrFile(None, "n.py").paths == {"n.py"} and PrFile("d.py", None).paths == {"d.py"}


def test_the_merge_bound_allows_the_clock_skew_and_needs_a_zone() -> None:
    bound = merge_bound("2026-08-13T10:00:19+08:00")
    assert bound == 1786586419 - int(MERGE_CLOCK_SKEW.total_seconds())
    assert merge_bound("2026-08-13T02:00:19.5Z") == bound
    assert merge_bound("") is None and merge_bound("yesterday") is None
    assert merge_bound("2026-08-13T10:00:19") is None


def test_the_oldest_commit_after_the_merge_with_the_prs_files_is_taken() -> None:
    early, squash, evil, again = (NamedCommit("a" * 40, 100), NamedCommit("b" * 40, 200),
                                  NamedCommit("c" * 40, 300), NamedCommit("d" * 40, 400))
    files = {early.sha: PR_FILES, squash.sha: PR_FILES,
             evil.sha: PR_FILES | {"test/test_evil.py"}, again.sha: PR_FILES}
    taken, passed = choose([early, squash, evil, again], files, PR_FILES, bound=150)
    assert taken == squash.sha
    assert passed == (PassedOver(early.sha, BEFORE_MERGE), PassedOver(evil.sha, FILES_DIFFER),
                      PassedOver(again.sha, LATER))


def test_no_commit_with_the_prs_files_takes_none() -> None:
    evil = NamedCommit("c" * 40, 300)
    taken, passed = choose([evil], {evil.sha: {"test/test_evil.py"}}, PR_FILES, bound=None)
    assert taken is None and passed == (PassedOver(evil.sha, FILES_DIFFER),)


def test_a_series_leaves_renamed_files_by_their_new_path_and_deleted_ones_not_at_all() -> None:
    changes = [("src/a.py", "src/a.py"), (None, "test/test_old.py"),
               ("test/test_old.py", "test/test_new.py"), ("test/test_gone.py", None),
               (None, "test/test_back.py"), ("test/test_back.py", None),
               (None, "test/test_back.py")]
    assert left_paths(changes) == ["src/a.py", "test/test_new.py", "test/test_back.py"]


def test_a_gitcode_file_item_with_flags_as_booleans_or_integers() -> None:
    def item(old: str, new: str, **flags: object) -> dict:
        return {"filename": new, "patch": {"old_path": old, "new_path": new, **flags}}

    assert pr_file(item("a.py", "a.py", new_file=True)) == PrFile(None, "a.py")
    assert pr_file(item("a.py", "a.py", new_file=1)) == PrFile(None, "a.py")
    assert pr_file(item("d.py", "d.py", deleted_file="1")) == PrFile("d.py", None)
    assert pr_file(item("o.py", "n.py", renamed_file=1, new_file=0)) == PrFile("o.py", "n.py")
    assert pr_file(item("m.py", "m.py", new_file=False, deleted_file=0)) == PrFile("m.py", "m.py")
    assert pr_file({"filename": "x.py"}) == PrFile("x.py", "x.py")  # no patch object
    assert pr_file({"filename": ""}) is None


def test_the_commits_passed_over_are_named_by_sha_five_at_most() -> None:
    passed = [PassedOver(str(i) * 40, FILES_DIFFER) for i in range(7)]
    said = describe_passed_over(passed)
    assert said.startswith(f"{'0' * 12} (its files are not the PR's), {'1' * 12} (")
    assert said.endswith(f"{'4' * 12} (its files are not the PR's) and 2 more")
    assert "5555" not in said
    assert describe_passed_over(passed[:1]) == f"{'0' * 12} (its files are not the PR's)"


def test_the_python_tests_a_series_leaves_follow_the_same_rule() -> None:
    def patch(*files: FileDiff) -> Patch:
        return Patch(path=Path("0001-x.patch"), files=files)

    added = patch(FileDiff(old=None, new="test/test_a.py", hunks=(), created=True),
                  FileDiff(old="test/test_gone.py", new="test/test_gone.py", hunks=()))
    renamed = patch(FileDiff(old="test/test_a.py", new="test/test_b.py", hunks=()),
                    FileDiff(old="test/test_gone.py", new=None, hunks=()))
    assert changed_python_tests([added, renamed]) == ["test/test_b.py"]
    assert changed_python_tests([added]) == ["test/test_a.py", "test/test_gone.py"]
