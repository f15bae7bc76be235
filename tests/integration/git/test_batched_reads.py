"""The batched forms the audit uses give what the one-item calls give: many blobs in one
``git cat-file --batch``, the tests a patch adds with its pre-images read at once; and a
series' tree computed afresh on a base."""

from __future__ import annotations

from pathlib import Path

from backport.audit import blobs, history
from backport.config.patchfiles import Patch, read_patch
from backport.git.apply import commit_tree, series_tree
from backport.git.python_tests import added_tests, pre_images
from backport.git.run import read_blobs
from tests.helpers.gitrepos import commit_file, format_patch, git, make_repo

PATH = "test/test_x.py"
BASE = ("import unittest\n" + "".join(f"# {n}\n" for n in range(12))
        + "\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        pass\n")


def _repo(tmp_path: Path) -> tuple[Path, str, list[Patch]]:
    """A base commit and three one-commit patches on it: two that apply, one that conflicts
    (made on a side line that changed the same line)."""
    work = make_repo(tmp_path / "work")
    base = commit_file(work, PATH, BASE, "base")
    commit_file(work, PATH, BASE + "    def test_b(self):\n        pass\n", "add test_b")
    good = read_patch(format_patch(work, "-1", tmp_path / "p1")[0])
    git(work, "reset", "--quiet", "--hard", base)
    commit_file(work, "README", "readme\n", "readme")
    other = read_patch(format_patch(work, "-1", tmp_path / "p2")[0])
    git(work, "reset", "--quiet", "--hard", base)
    commit_file(work, PATH, BASE.replace("import unittest", "import unittest as u"), "as u")
    bad = read_patch(format_patch(work, "-1", tmp_path / "p3")[0])
    git(work, "reset", "--quiet", "--hard", base)
    commit_file(work, PATH, BASE.replace("import unittest", "import unittest as v"), "as v")
    return work, git(work, "rev-parse", "HEAD"), [good, bad, other]


def test_read_blobs_reads_blobs_by_id_and_by_path_and_leaves_out_the_rest(tmp_path: Path) -> None:
    work = make_repo(tmp_path / "work")
    data = "a\nb\n\nno end"
    head = commit_file(work, "dir/f.txt", data, "one")
    oid = git(work, "rev-parse", f"{head}:dir/f.txt")
    found = read_blobs(work, [oid, f"{head}:dir/f.txt", f"{head}:dir", f"{head}:nope",
                              "0" * 40, oid])
    assert found == {oid: data.encode(), f"{head}:dir/f.txt": data.encode()}
    assert read_blobs(work, []) == {}


def test_series_tree_is_the_tree_git_am_makes_or_none_on_a_conflict(tmp_path: Path) -> None:
    work, head, patches = _repo(tmp_path)
    one_by_one = [series_tree(work / ".git", head, [p]) for p in patches]
    assert one_by_one[0] is not None and one_by_one[2] is not None
    assert one_by_one[1] is None  # the conflict
    git(work, "checkout", "--quiet", "--detach", head)
    git(work, "am", "--3way", "--quiet", str(patches[0].path), str(patches[2].path))
    assert series_tree(work / ".git", head, patches[::2]) == commit_tree(work / ".git", "HEAD")
    assert series_tree(work / ".git", head, patches[::2]) not in one_by_one


def test_the_audit_batches_say_what_one_item_says(tmp_path: Path) -> None:
    work, head, patches = _repo(tmp_path)
    emails = [(f"{i:040x}", p.data) for i, p in enumerate(patches)]
    entries = history.tree_entries(work, head)
    touched = [(c, [PATH, "README"], email) for c, email in emails]
    assert blobs.applies(work, entries, touched) == {
        c: series_tree(work / ".git", head, [p]) is not None for (c, _), p in zip(emails, patches,
                                                                         strict=True)}
    pre = read_blobs(work, pre_images(patches))
    assert len(pre) == 1  # the pre-image both patches changing the test file share
    assert added_tests(work, patches, pre.get) == added_tests(work, patches)
    assert history.tests_added(work, emails) == {
        c: [t.node_id for t in added_tests(work, [p])] for (c, _), p in zip(emails, patches,
                                                                            strict=True)}
    assert history.tests_added(work, emails)[emails[0][0]] == [f"{PATH}::T::test_b"]
