"""The PR keys GitCode's behaviour asks for: ``close_related_issue`` and ``comment_on_push``."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config import load_branch_map, load_patch_set
from backport.errors import ConfigError
from tests.helpers.config_samples import BRANCHES_YAML, PATCH_YAML, write_project


def _load(root: Path, branches_extra: str = "", patch_extra: str = ""):
    config = write_project(root, branches=BRANCHES_YAML + branches_extra,
                           patch_yaml=PATCH_YAML + patch_extra)
    return load_patch_set(root / "patches" / "put_metric", load_branch_map(config, environ={}))


def test_defaults_keep_the_shared_issue_open_and_comment_once(tmp_path: Path) -> None:
    ps = _load(tmp_path)
    assert ps.pr.close_related_issue is False and ps.pr.comment_on_push is False


def test_patch_yaml_overrides_branches_yaml(tmp_path: Path) -> None:
    ps = _load(tmp_path, patch_extra="pr: {comment: compile, comment_on_push: true, "
                                     "close_related_issue: true}\n")
    assert (ps.pr.comment, ps.pr.comment_on_push, ps.pr.close_related_issue) == (
        "compile", True, True)


@pytest.mark.parametrize("key", ["comment_on_push", "close_related_issue"])
def test_a_non_boolean_names_the_file_line_and_key(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, patch_extra=f"pr: {{{key}: sometimes}}\n")
    message = str(info.value)
    assert "patch.yaml" in message and f"pr.{key}" in message
    assert "must be true or false" in message and "\n" not in message
