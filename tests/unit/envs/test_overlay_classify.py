"""The one classification of a series' paths: test, torch_npu Python, compiled, other."""

from __future__ import annotations

import pytest

from backport.envs.model import ChangeScope
from backport.envs.overlay import classify, overlay_paths, scope_of


@pytest.mark.parametrize(("path", "kind"), [
    ("test/distributed/elastic/metrics/test_metrics_api.py", "test"),
    ("test/npu/helper.cpp", "test"),  # the run takes test/ from the worktree, whatever it is
    ("torch_npu/__init__.py", "python"),
    ("torch_npu/npu/utils.py", "python"),
    ("torch_npu/_inductor/codegen/triton.py", "python"),
    ("torch_npu/csrc/aten/ops/AddKernelNpu.cpp", "compiled"),
    ("torch_npu/csrc/core/npu/NPUStream.h", "compiled"),
    ("torch_npu/csrc/CMakeLists.txt", "compiled"),
    ("torch_npu/csrc/aten/npu_native_functions.yaml", "compiled"),
    ("torch_npu/csrc/tools/gen.py", "compiled"),  # built from, not installed as, Python
    ("third_party/op-plugin", "compiled"),
    ("torchnpugen/gen_backend_stubs.py", "compiled"),
    ("cmake/public/npu.cmake", "compiled"),
    ("CMakeLists.txt", "compiled"),
    ("setup.py", "compiled"),
    ("version.txt", "compiled"),
    (".gitmodules", "compiled"),
    ("torch_npu/include/foo.hpp", "compiled"),
    ("docs/zh/api.md", "other"),
    ("README.md", "other"),
    (".github/workflows/ci.yml", "other"),
    (".ci/build.sh", "other"),
    ("requirements.txt", "other"),
    ("torch_npu/README.md", "other"),
    ("torch_npu/__init__.pyi", "other"),
    ("examples/demo.py", "other"),
    ("tools/setup.py", "other"),  # only the root's setup.py builds the wheel
    ("torch_npu", "other"),
])
def test_each_path_has_one_kind(path: str, kind: str) -> None:
    assert classify(path) == kind


def test_a_leading_slash_or_blank_changes_nothing() -> None:
    assert classify("/torch_npu/npu/utils.py") == "python"
    assert classify(" test/x.py ") == "test"
    assert classify("") == "other"


def test_the_scope_sorts_each_group_and_leaves_tests_out() -> None:
    scope = scope_of(["torch_npu/npu/utils.py", "test/test_x.py", "README.md",
                      "torch_npu/csrc/x.cpp", "torch_npu/a.py", "setup.py", "torch_npu/a.py"])
    assert scope == ChangeScope(overlay=("torch_npu/a.py", "torch_npu/npu/utils.py"),
                                not_in_build=("setup.py", "torch_npu/csrc/x.cpp"),
                                not_exercised=("README.md",))
    assert overlay_paths(["torch_npu/a.py", "test/t.py", "torch_npu/csrc/x.cpp"]) == (
        "torch_npu/a.py",)


def test_python_files_that_could_not_be_overlaid_are_not_in_the_build() -> None:
    scope = scope_of(["torch_npu/a.py", "torch_npu/csrc/x.cpp"], overlaid=False)
    assert scope.overlay == ()
    assert scope.not_in_build == ("torch_npu/a.py", "torch_npu/csrc/x.cpp")


def test_a_test_only_series_has_an_empty_scope() -> None:
    assert not scope_of(["test/a.py", "test/b/c.py"])
    assert scope_of(["docs/a.md"])
