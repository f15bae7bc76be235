"""`backport new`'s rules before git: which files are tests, which patch set names the loader takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config.patch_set import patch_set_name_problem
from backport.errors import BackportError
from backport.git.patch_export import test_files as pick_test_files


def test_test_files_filter() -> None:
    paths = ["test/npu/test_storage.py", "test/distributed/elastic/metrics/helper.py",
             "torch_npu/foo_test.py", "torch_npu/utils/test_helpers.py", "src/testing.py",
             "docs/test_plan.md", "tests/data.json", "contest/x.py", "test/npu/test_storage.py"]
    assert pick_test_files(paths) == [
        "test/npu/test_storage.py", "test/distributed/elastic/metrics/helper.py",
        "torch_npu/foo_test.py", "torch_npu/utils/test_helpers.py", "tests/data.json"]
    assert pick_test_files(["test", "tests"]) == []


@pytest.mark.parametrize("name", ["-x", "é_api", ".hidden", "a.lock", "a/b", "../escape", "x."])
def test_new_refuses_a_name_the_loader_refuses(tmp_path: Path, name: str) -> None:
    from click.testing import CliRunner

    from backport.cli import cli
    from tests.helpers.config_samples import BRANCHES_YAML
    (tmp_path / "branches.yaml").write_text(BRANCHES_YAML, encoding="utf-8")
    result = CliRunner().invoke(cli, ["--config", str(tmp_path / "branches.yaml"), "new",
                                      "--from", "HEAD", "--api", "a.b", "--issue", "1", "--", name])
    assert isinstance(result.exception, BackportError)
    assert result.exception.code == "usage"
    assert f"patch set name '{name}' may use only" in result.exception.message
    assert not (tmp_path / "patches").exists()


@pytest.mark.parametrize("name", ["put_metric", "put-metric", "v2.7", "A1"])
def test_patch_set_names_the_loader_accepts(name: str) -> None:
    assert patch_set_name_problem(name) is None
