"""JSON lists of one member per line merged entry by entry, from their texts."""

from __future__ import annotations

from backport.git.apply_fallbacks import merge_entries
from tests.helpers.torch_npu_files import doc


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
