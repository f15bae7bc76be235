"""The content rule on patch texts and file texts made here: the change already on the target
(moved, assertion removed, adapted around it) or not."""

from __future__ import annotations

import difflib

from backport.audit.content import landed, parse, probe

BEFORE = "".join(f"line_{n} = {n}\n" for n in range(20))


def diff(path: str, old: str, new: str) -> str:
    """A unified diff of one file, as `git log -p` writes it (3 lines of context)."""
    body = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{path}", f"b/{path}", n=3))
    return f"diff --git a/{path} b/{path}\nindex 1..2 100644\n{body}"


def change(text: str, at: int, line: str | None) -> str:
    lines = text.splitlines(True)
    if line is None:
        del lines[at]
    else:
        lines[at] = line
    return "".join(lines)


def by_name(tree: set[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in tree:
        found.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    return found


def test_the_change_already_there_in_the_same_file() -> None:
    after = change(BEFORE, 5, "line_5 = 'five'\n")
    files = parse(diff("torch_npu/a.py", BEFORE, after))
    tree = {"torch_npu/a.py"}
    assert landed(files, tree, by_name(tree), {"torch_npu/a.py": after}) == "torch_npu/a.py"
    assert landed(files, tree, by_name(tree), {"torch_npu/a.py": BEFORE}) == ""
    # the target adapted the lines around it elsewhere in the file: still there
    elsewhere = change(after, 15, "line_15 = 'other'\n")
    assert landed(files, tree, by_name(tree), {"torch_npu/a.py": elsewhere}) == "torch_npu/a.py"
    assert probe(files) == "line_5 = 'five'"


def test_a_file_moved_on_the_target_is_followed_by_its_name() -> None:
    after = change(BEFORE, 5, "line_5 = 'five'\n")
    files = parse(diff("torch_npu/utils/u.py", BEFORE, after))
    tree = {"torch_npu/old/u.py", "torch_npu/a.py"}
    assert landed(files, tree, by_name(tree), {"torch_npu/old/u.py": after}) == "torch_npu/old/u.py"
    assert landed(files, tree, by_name(tree), {"torch_npu/old/u.py": BEFORE}) == ""


def test_an_assertion_the_target_already_removed() -> None:
    with_assert = change(BEFORE, 8, "    assert x > 0\n")
    without = change(with_assert, 8, None)
    files = parse(diff("torch_npu/b.py", with_assert, without))
    tree = {"torch_npu/b.py"}
    assert landed(files, tree, by_name(tree), {"torch_npu/b.py": without}) == "torch_npu/b.py"
    assert landed(files, tree, by_name(tree), {"torch_npu/b.py": with_assert}) == ""
    assert probe(files) == "assert x > 0"


def test_every_file_must_hold_and_a_file_it_deletes_must_be_gone() -> None:
    after = change(BEFORE, 5, "line_5 = 'five'\n")
    two = diff("a.py", BEFORE, after) + diff("b.py", BEFORE, after)
    tree = {"a.py", "b.py"}
    assert landed(parse(two), tree, by_name(tree), {"a.py": after, "b.py": BEFORE}) == ""
    assert landed(parse(two), tree, by_name(tree), {"a.py": after, "b.py": after}) == "a.py"
    gone = diff("a.py", BEFORE, after) + ("diff --git a/c.py b/c.py\ndeleted file mode 100644\n"
                                          "--- a/c.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n")
    assert landed(parse(gone), tree, by_name(tree), {"a.py": after}) == "a.py"
    assert landed(parse(gone), tree | {"c.py"}, by_name(tree | {"c.py"}), {"a.py": after}) == ""


def test_nothing_to_look_for_is_not_landed() -> None:
    binary = "diff --git a/x.bin b/x.bin\nindex 1..2 100644\nGIT binary patch\nliteral 1\n"
    assert landed(parse(binary), {"x.bin"}, {"x.bin": ["x.bin"]}, {"x.bin": ""}) == ""
    assert landed([], set(), {}, {}) == ""


def test_blank_lines_more_or_less_are_no_change() -> None:
    # issue 48 item 1: a fix whose every change is on the target, but for a blank line it drops
    spaced = change(BEFORE, 6, "\n")
    after = change(change(spaced, 5, "line_5 = 'five'\n"), 6, None)  # and the blank line goes
    files = parse(diff("torch_npu/a.py", spaced, after))
    tree = {"torch_npu/a.py"}
    kept_blank = change(spaced, 5, "line_5 = 'five'\n")
    assert landed(files, tree, by_name(tree), {"torch_npu/a.py": kept_blank}) == "torch_npu/a.py"
    assert landed(files, tree, by_name(tree), {"torch_npu/a.py": spaced}) == ""
    only_blank = parse(diff("torch_npu/a.py", spaced, BEFORE))
    assert landed(only_blank, tree, by_name(tree), {"torch_npu/a.py": spaced}) == ""


def test_the_added_lines_with_other_lines_around_them() -> None:
    # issue 48 item 1: the fix's lines are on the target, whose neighbouring lines differ
    ops = "".join(f"    aten.op_{n}.default,\n" for n in range(12))
    source = "OPS = [\n" + ops + "    # aten.full.default,\n]\n"
    fixed = source.replace("    # aten.full.default,\n", "    aten.full.default,\n")
    files = parse(diff("dvm/graph_fusion.py", source, fixed))
    tree = {"dvm/graph_fusion.py"}
    other = "OPS = [\n    aten.where.default,\n    aten.full.default,\n]\n"
    assert landed(files, tree, by_name(tree), {"dvm/graph_fusion.py": other}) != ""
    still = other.replace("    aten.full.default,\n", "    # aten.full.default,\n")
    assert landed(files, tree, by_name(tree), {"dvm/graph_fusion.py": still}) == ""
    both = other + "    # aten.full.default,\n"  # the removed line still there
    assert landed(files, tree, by_name(tree), {"dvm/graph_fusion.py": both}) == ""
    short = parse(diff("a.py", "x = 1\n" * 8, "x = 1\n" * 4 + "y = 2\n" + "x = 1\n" * 4))
    assert landed(short, {"a.py"}, by_name({"a.py"}), {"a.py": "y = 2\nz = 3\n"}) == ""


def test_the_code_is_asked_not_the_tests_a_port_adapts() -> None:
    after = change(BEFORE, 5, "line_5 = 'five'\n")
    test_before = "def test_a():\n    assert f(10) == 10\n"
    test_after = "def test_a():\n    assert f(20) == 20\n"
    files = parse(diff("torch_npu/a.py", BEFORE, after)
                  + diff("test/test_a.py", test_before, test_after))
    tree = {"torch_npu/a.py", "test/test_a.py"}
    adapted = "def test_a():\n    assert f(30) == 30\n"
    assert landed(files, tree, by_name(tree), {"torch_npu/a.py": after,
                                                "test/test_a.py": adapted}) == "torch_npu/a.py"
    assert landed(files, tree, by_name(tree), {"torch_npu/a.py": BEFORE,
                                                "test/test_a.py": test_after}) == ""
    tests_only = parse(diff("test/test_a.py", test_before, test_after))
    assert landed(tests_only, tree, by_name(tree), {"test/test_a.py": adapted}) == ""
