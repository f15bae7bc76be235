"""Branch tags in titles (backport/titles.py): the forms Ascend/pytorch's history uses."""

from __future__ import annotations

import pytest

from backport.titles import backport_title, names_branch, strip_branch_tags

BRANCHES = ("master", "v2.7.1", "v2.11.0", "v2.12.0")


@pytest.mark.parametrize(("tag", "branch", "names"), [
    ("master", "master", True), ("MASTER", "master", True), ("v2.12.0", "v2.12.0", True),
    ("2.7.1", "v2.7.1", True), ("2.7", "v2.7.1", True), ("v2.11", "v2.11.0", True),
    ("2.1", "v2.11.0", False), ("2.11.0", "v2.12.0", False), ("fix", "master", False),
    ("v2", "v2.7.1", False), ("", "master", False), ("docs", "v2.7.1", False),
])
def test_which_tag_names_a_branch(tag: str, branch: str, names: bool) -> None:
    assert names_branch(tag, branch) is names


@pytest.mark.parametrize(("title", "stripped"), [
    ("[master] test: add test cases for torch.is_conj", "test: add test cases for torch.is_conj"),
    ("[master]refactor: move shape handling into dynamo utils (#4241)",
     "refactor: move shape handling into dynamo utils (#4241)"),
    ("[2.7.1]refactor: move shape handling", "refactor: move shape handling"),
    ("[2.7]fix: 修复懒加载 npugraph_ex 子模块绑定（#4222）", "fix: 修复懒加载 npugraph_ex 子模块绑定（#4222）"),
    ("[fix][2.11.0]fix the problem when py version 3.12+ cause core dump",
     "[fix]fix the problem when py version 3.12+ cause core dump"),
    ("[master][docs]add TORCH_NPU_FALLBACK_CPU_DISABLE doc",
     "[docs]add TORCH_NPU_FALLBACK_CPU_DISABLE doc"),
    ("【v2.12.0】 test: add cases", "test: add cases"),
    ("fix(v2.11.0): initialize NPU Inductor config", "fix: initialize NPU Inductor config"),
    ("fix: preserve deferred Triton backend loading (master)",
     "fix: preserve deferred Triton backend loading"),
    ("mlir_add_layout_for_matmul_backward_2.12", "mlir_add_layout_for_matmul_backward"),
    ("add profiler ut_v2.11", "add profiler ut"),
    ("add nsa apis - master", "add nsa apis"),
    ("add nsa apis -v2.7.1", "add nsa apis"),
    ("test: add cases [v2.7.1] (master)", "test: add cases"),
    # kept: tags naming no branch, and what only looks like one
    ("[inductor] flexattention: disable logger", "[inductor] flexattention: disable logger"),
    ("fix(inductor): keep autotune out", "fix(inductor): keep autotune out"),
    ("【API一致性任务】test: add NPU coverage", "【API一致性任务】test: add NPU coverage"),
    ("fix dynamic profile log on master", "fix dynamic profile log on master"),
    ("support python 3.12 - 3.13", "support python 3.12 - 3.13"),
    ("bump to v2.12.0-rc1", "bump to v2.12.0-rc1"),
    ("[master]", "[master]"),  # nothing else: kept whole
])
def test_tags_naming_a_branch_are_removed_others_kept(title: str, stripped: str) -> None:
    assert strip_branch_tags(title, BRANCHES) == stripped


def test_only_the_named_branches_tags_go() -> None:
    assert strip_branch_tags("[v2.12.0] test: x (master)", ["master"]) == "[v2.12.0] test: x"


def test_the_backports_of_a_master_pr_drop_its_tag_and_take_the_targets() -> None:
    title = "[master] test: add test cases for torch.is_conj"
    for target in ("v2.7.1", "v2.11.0", "v2.12.0"):
        assert backport_title(title, source="master", target=target, tag=None) == \
            "test: add test cases for torch.is_conj"
    assert backport_title(title, source="master", target="v2.7.1", tag="[v2.7.1]") == \
        "[v2.7.1] test: add test cases for torch.is_conj"
    # a tag naming the target already there is replaced, not doubled
    assert backport_title("[v2.7.1] test: x", source="master", target="v2.7.1",
                          tag="[v2.7.1]") == "[v2.7.1] test: x"
    # a set not made from a PR keeps its title, and takes the target's tag when asked
    assert backport_title("test: add put_metric coverage", source=None, target="v2.7.1",
                          tag=None) == "test: add put_metric coverage"
    assert backport_title("[master] test: y", source=None, target="v2.7.1", tag="【2.7.1】") == \
        "【2.7.1】 [master] test: y"
