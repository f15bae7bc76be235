"""The audit's title key (`titles.title_key`): what stays the same when one fix is opened per branch."""

from __future__ import annotations

import pytest

from backport.titles import title_key

BRANCHES = ("v2.7.1", "v2.11.0", "v2.12.0", "master")


@pytest.mark.parametrize(("title", "bare"), [
    ("fix the cann check - v2.12.0", "fix the cann check"),
    ("fix the cann check - v2.7.1", "fix the cann check"),
    ("[feat][v2.12.0]add npu graph", "[feat] add npu graph"),
    ("[feat] add npu graph", "[feat] add npu graph"),
    ("fix benchmark README issue master", "fix benchmark readme issue"),
    ("fix benchmark README issue v2.11", "fix benchmark readme issue"),
    ("fix dump_v2.11", "fix dump"),
    ("[master] fix y", "fix y"),
    ("【v2.7.1】修复 dump", "修复 dump"),
    ("v2.12.0: fix z", "fix z"),
    ("fix (v2.11.0)", "fix"),
    ("[onnx] fix group_norm_silu api.", "[onnx] fix group_norm_silu api"),
    ("[torch_2.7.1]修复 parser", "修复 parser"),
    ("[torch_master]修复 parser", "修复 parser"),
    ("[bugfix][v2.7.1_logs] improve logs", "[bugfix] improve logs"),
    ("[fix][2.12.0]fix core dump", "[fix] fix core dump"),
])
def test_tags_are_stripped(title: str, bare: str) -> None:
    assert title_key(title, BRANCHES) == bare


@pytest.mark.parametrize("title", [
    "fix: mastery of things", "update README for main branch docs", "use v2 api in x",
    "fix issue 2.7 of the plan", "[inductor] fix", "[npu_v2] fix"])
def test_words_that_are_no_tag_stay(title: str) -> None:
    assert title_key(title, BRANCHES) == " ".join(title.split()).lower()


def test_a_title_that_is_only_a_tag_stays() -> None:
    assert title_key("v2.12.0", BRANCHES) == "v2.12.0"
    assert title_key("[release-x] y", ("release-x",)) == "y"
