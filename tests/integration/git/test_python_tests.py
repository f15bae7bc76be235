"""The tests a series adds, read from the patch; which a target already has (and since which
commit); and the check that a changed test file compiles and hides no definition."""

from __future__ import annotations

from pathlib import Path

from backport.config.patchfiles import Patch, read_patch
from backport.git.python_tests import (
    AddedTest,
    added_tests,
    changed_python_tests,
    present_tests,
    source_problems,
)
from tests.helpers.gitrepos import commit_file, format_patch, git, make_bare, make_repo

PATH = "test/test_metrics.py"
BASE = '''\
import unittest


class MetricsTest(unittest.TestCase):

    def test_a(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
'''
PATCHED = BASE.replace('''        self.assertTrue(True)
''', '''        self.assertTrue(True)

    def test_b(self):
        self.assertEqual(1, 1)


def test_module_level():
    assert True
''')
UPSTREAM_B = BASE.replace('''class MetricsTest(unittest.TestCase):
''', '''class MetricsTest(unittest.TestCase):

    def test_b(self):
        self.assertIn(1, [1])
''')


def _series(tmp_path: Path) -> tuple[Path, list[Patch]]:
    """An upstream with the test file and a patch (full index) adding test_b and a module test."""
    work = make_repo(tmp_path / "work")
    commit_file(work, PATH, BASE, "base")
    git(work, "branch", "release")
    commit_file(work, PATH, PATCHED, "add test_b")
    patches = [read_patch(p) for p in format_patch(work, "-1", tmp_path / "patches")]
    git(work, "reset", "--quiet", "--hard", "HEAD~1")
    return work, patches


def test_added_tests_come_from_the_patched_file_with_their_class(tmp_path: Path) -> None:
    work, patches = _series(tmp_path)
    assert added_tests(work, patches) == [AddedTest(PATH, "MetricsTest", "test_b"),
                                          AddedTest(PATH, "", "test_module_level")]
    # Without the pre-image blob the hunks alone name them; the class line is out of sight.
    empty = make_bare(tmp_path / "empty.git")
    assert [(t.scope, t.name) for t in added_tests(empty, patches)] == [
        (None, "test_b"), ("", "test_module_level")]
    assert changed_python_tests(patches) == [PATH]


def test_present_names_the_existing_test_and_the_commit_that_added_it(tmp_path: Path) -> None:
    work, patches = _series(tmp_path)
    git(work, "checkout", "--quiet", "release")
    sha = commit_file(work, PATH, UPSTREAM_B, "test: upstream's own test_b")
    commit_file(work, "README", "later\n", "an unrelated later commit")
    found = present_tests(work, "release", added_tests(work, patches))
    assert [(p.test.qualname, p.line, p.commit, p.subject) for p in found] == [
        ("MetricsTest.test_b", 6, sha[:9], "test: upstream's own test_b")]
    # The same name in another class is another test.
    commit_file(work, PATH, UPSTREAM_B.replace("class MetricsTest", "class OtherTest"), "rename")
    assert present_tests(work, "release", added_tests(work, patches)) == []


def test_a_redefinition_the_series_makes_is_named_with_both_lines(tmp_path: Path) -> None:
    work = make_repo(tmp_path / "work")
    base = commit_file(work, PATH, UPSTREAM_B, "base with test_b")
    shadowed = UPSTREAM_B.replace('''        self.assertTrue(True)
''', '''        self.assertTrue(True)

    def test_b(self):
        self.assertEqual(1, 1)
''')
    head = commit_file(work, PATH, shadowed, "the patch")
    assert source_problems(work, base, head, [PATH]) == [
        f"{PATH} defines MetricsTest.test_b twice (lines 6 and 12): the second definition "
        "hides the first, so one test would never run"]
    # A redefinition the target already had is not the series' doing.
    again = commit_file(work, PATH, shadowed + "\n# a later edit\n", "edit")
    assert source_problems(work, head, again, [PATH]) == []


def test_a_file_that_does_not_compile_is_named_with_its_line(tmp_path: Path) -> None:
    work = make_repo(tmp_path / "work")
    base = commit_file(work, PATH, BASE, "base")
    head = commit_file(work, PATH, BASE.replace("self.assertTrue(True)", "self.assertTrue(True"),
                       "broken")
    problems = source_problems(work, base, head, [PATH])
    assert len(problems) == 1 and problems[0].startswith(f"{PATH} does not compile (line 7")



