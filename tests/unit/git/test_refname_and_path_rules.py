"""The git runner's rules checked before any git runs: branch names, local paths, credentials, folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config.validate import refname_problem
from backport.errors import BackportError
from backport.git.run import check_branch_name, git
from backport.redact import redact, strip_url_credentials


def test_a_missing_directory_is_an_error_not_the_current_one(tmp_path: Path) -> None:
    with pytest.raises(BackportError) as info:
        git(["status"], cwd=tmp_path / "gone")
    assert info.value.message == f"cannot run git status: directory {tmp_path / 'gone'} does not exist."


@pytest.mark.parametrize("name", ["HEAD", "@", ".a", "a/.b", "a.lock", "-x", "a..b", "x" * 300])
def test_branch_names_follow_the_one_refname_rule(name: str) -> None:
    with pytest.raises(BackportError) as info:
        check_branch_name(name)
    assert info.value.code == "usage"
    assert info.value.message.startswith(f"invalid branch name {name!r}: ")
    assert refname_problem(name) in info.value.message


@pytest.mark.parametrize("name", ["master", "v2.7.1", "test-put-metric-v2.7.1", "a{b", "x/HEAD"])
def test_good_branch_names_pass(name: str) -> None:
    check_branch_name(name)


def test_local_paths_and_credentials_have_one_rule_each() -> None:
    from backport.config import validate
    from backport.git import run as run_module
    assert run_module.is_local_path is validate.is_local_path
    assert strip_url_credentials("https://user:tok@host/x.git") == "https://host/x.git"
    assert strip_url_credentials("https://@host/x.git") == "https://host/x.git"
    assert redact("see https://user:tok@host/x.git") == "see https://***@host/x.git"
