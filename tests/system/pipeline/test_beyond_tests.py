"""A series that changes more than tests, applied and tested under the real torch 2.13.0 venv
with its released torch_npu 2.13.0: a torch_npu Python change runs with the branch's file laid
over the installed package and says so; a C++ change is reported as not in the build that ran,
and its green run does not read as proof (draft PR, no plain pass in the table)."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from backport.config.model import Environment
from backport.envs.overlay import installed_package
from tests.helpers.gitrepos import clone, commit_files, format_patch, git
from tests.helpers.project import TORCH_PYTHON, edit_config, needs_torch, pr_body, run_app
from tests.helpers.torch_npu_files import COMPAT, COMPAT_TEST

pytestmark = needs_torch

CPP = "torch_npu/csrc/core/npu/NPUVersion.cpp"
DOC = "docs/zh/compat.md"
COMPAT_TEST_PATH = "test/npu/test_compat_version.py"
CPP_TEST_PATH = "test/npu/test_npu_version.py"
CPP_TEST = '''import unittest


class NpuVersion(unittest.TestCase):
    def test_version_string(self):
        self.assertEqual("2.13.0".split("."), ["2", "13", "0"])


if __name__ == "__main__":
    unittest.main()
'''


def _released_compat() -> str:
    assert TORCH_PYTHON
    package = installed_package(Environment(name="torch", python=Path(TORCH_PYTHON)))
    return (package / "_compat" / "version.py").read_text(encoding="utf-8")


def _patch_set(sandbox, tmp: Path, name: str, change: Callable[[str], dict[str, str]],
               test: str) -> None:
    """Upstream master gets the released sources first; the set changes them (``change`` of
    the released version.py) and adds a test."""
    work = clone(sandbox.upstream, tmp / f"author-{name}", branch="master")
    released = _released_compat()
    commit_files(work, {COMPAT: released, CPP: "int npu_version() { return 1; }\n",
                        DOC: "# compat\n"}, "sources as released")
    git(work, "push", "--quiet", "origin", "HEAD:refs/heads/master")
    commit_files(work, change(released), f"test: {name}")
    folder = sandbox.project / "patches" / name
    format_patch(work, "-1", folder)
    (folder / "patch.yaml").write_text(yaml.safe_dump({
        "api": f"torch_npu._compat.{name}", "issue": 3300, "title": f"test: {name}",
        "tests": [{"path": test, "args": ["-v"]}], "device": "none",
        "branches": ["master"]}), encoding="utf-8")


def _draft(project: Path, base: str) -> bool:
    with sqlite3.connect(project / ".backport" / "forge.sqlite") as db:
        (draft,) = db.execute("SELECT draft FROM prs WHERE base = ?", (base,)).fetchone()
    return bool(draft)


def _evidence(body: str) -> list[str]:
    block = body.split("<!-- api-validation-evidence:start -->", 1)[1]
    return block.split("<!-- api-validation-evidence:end -->", 1)[0].splitlines()


def test_a_torch_npu_python_change_runs_with_the_branch_file_and_says_so(sandbox, tmp_path):
    def change(released: str) -> dict[str, str]:
        patched = released.replace("return (int(parts[0]), int(parts[1]))",
                                   "return tuple(int(p) for p in parts[:3])")
        assert patched != released
        return {COMPAT: patched, COMPAT_TEST_PATH: COMPAT_TEST, DOC: "# compat\n\n_parse\n"}

    _patch_set(sandbox, tmp_path, "compat_parse", change, COMPAT_TEST_PATH)
    result = run_app(sandbox.project, "apply", "--api", "compat_parse", "--json")
    assert result.code == 0, result.err + result.out
    (branch,) = result.json()["branches"]
    assert branch["status"] == "done"
    test = branch["test"]
    # The released _parse gives (2, 13): only the branch's file makes the added test pass.
    assert test["ok"] is True and test["patch_tests"] == [["test_parse_keeps_the_patch_level", "ok"]]
    assert test["runner"] == "isolated"
    assert test["changes"] == {"overlay": [COMPAT], "not_in_build": [],
                               "not_exercised": [DOC]}
    body = pr_body(sandbox.project, "master")
    evidence = _evidence(body)
    assert f"OVERLAY={COMPAT}" in evidence
    assert f"NOT_EXERCISED={DOC}" in evidence
    assert not any(line.startswith("NOT_IN_BUILD=") for line in evidence)
    assert "PATCH_TESTS=test_parse_keeps_the_patch_level ok" in evidence, "\n".join(evidence)
    command = next(line for line in evidence if line.startswith("COMMAND="))
    assert command.endswith(f" PYTHONPATH='<torch_npu overlay>' python {COMPAT_TEST_PATH} -v")
    assert "RUNNER=isolated" in evidence
    assert f"torch_npu 中的 `{COMPAT}` 以该分支的版本运行" in body
    assert f"master：补丁修改了 torch_npu 的 Python 文件 `{COMPAT}`。" in body
    assert f"master：补丁修改的 `{DOC}` 既不是测试也不是 torch_npu 代码，本次测试未涉及。" in body
    assert str(tmp_path) not in body
    assert not _draft(sandbox.project, "master")


def test_a_cpp_change_is_not_in_the_build_and_its_green_run_proves_nothing(sandbox, tmp_path):
    _patch_set(sandbox, tmp_path, "npu_version",
               lambda _: {CPP: "int npu_version() { return 2; }\n", CPP_TEST_PATH: CPP_TEST},
               CPP_TEST_PATH)
    result = run_app(sandbox.project, "apply", "--api", "npu_version", "--json")
    assert result.code == 0, result.err + result.out
    (branch,) = result.json()["branches"]
    test = branch["test"]
    assert test["ok"] is True  # the tests passed ...
    assert test["changes"]["not_in_build"] == [CPP]  # ... on a build without the change
    body = pr_body(sandbox.project, "master")
    evidence = _evidence(body)
    assert f"NOT_IN_BUILD={CPP}" in evidence
    assert not any(line.startswith("OVERLAY=") for line in evidence)
    row = next(line for line in body.splitlines() if line.startswith("| master | Ran "))
    assert f"未验证改动（证据中的 `NOT_IN_BUILD`）：`{CPP}` 不在所测的 torch_npu 构建中" in row
    assert "上表结果不能证明该改动有效" in body
    assert _draft(sandbox.project, "master")  # the PR does not present it as validated


def test_check_warns_that_a_cpp_change_is_not_in_the_build(sandbox, tmp_path):
    _patch_set(sandbox, tmp_path, "npu_version",
               lambda _: {CPP: "int npu_version() { return 2; }\n", CPP_TEST_PATH: CPP_TEST},
               CPP_TEST_PATH)
    result = run_app(sandbox.project, "check", "--api", "npu_version", "--offline", "--json")
    assert result.code == 0, result.err + result.out
    assert (f"patches/npu_version: {CPP} not in the build the tests run on: a passing run does "
            f"not validate them (draft PRs)") in result.json()["warnings"]


def test_a_torch_npu_change_where_torch_npu_is_not_installed_is_not_in_the_build(sandbox,
                                                                                 tmp_path):
    """No installed package to lay the file over: the run cannot see the change, and says so."""
    def plain(data: dict) -> None:
        for env in data["environments"].values():
            env["python"] = sys.executable  # the tool's own interpreter: no torch_npu
    edit_config(sandbox, plain)
    _patch_set(sandbox, tmp_path, "compat_plain",
               lambda released: {COMPAT: released + "\n# patched\n", CPP_TEST_PATH: CPP_TEST},
               CPP_TEST_PATH)
    result = run_app(sandbox.project, "apply", "--api", "compat_plain", "--json")
    assert result.code == 0, result.err + result.out
    (branch,) = result.json()["branches"]
    assert branch["test"]["ok"] is True
    assert branch["test"]["changes"]["overlay"] == []
    assert branch["test"]["changes"]["not_in_build"] == [COMPAT]
    evidence = _evidence(pr_body(sandbox.project, "master"))
    assert f"NOT_IN_BUILD={COMPAT}" in evidence
    assert _draft(sandbox.project, "master")
