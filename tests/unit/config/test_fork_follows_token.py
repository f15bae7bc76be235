"""`fork:` is optional: without it the fork is `<token's login>/<upstream's repo name>`."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config import load_branch_map
from backport.config.branch_map import FORK_PLACEHOLDER
from backport.errors import BackportError, ConfigError

MAP = """forge: gitcode
upstream: Ascend/pytorch
{fork}environments:
  e1: {{python: /py}}
branches:
  master: {{env: e1}}
"""


def _load(tmp_path: Path, fork: str = "", environ: dict[str, str] | None = None):
    path = tmp_path / "branches.yaml"
    path.write_text(MAP.format(fork=fork), encoding="utf-8")
    return load_branch_map(path, environ=environ or {})


def test_a_map_without_fork_follows_the_tokens_login(tmp_path: Path) -> None:
    bm = _load(tmp_path)
    assert (bm.fork, bm.fork_url, bm.fork_note) == ("", "", "")
    assert bm.fork_shown == "<token's login>/pytorch"
    named = bm.with_login("li-lei")
    assert named.fork == "li-lei/pytorch"
    assert named.fork_url == "https://gitcode.com/li-lei/pytorch.git"
    assert named.with_login("someone-else") == named  # named once, then kept


def test_a_fork_url_from_the_environment_stays_with_the_login_given(tmp_path: Path) -> None:
    bm = _load(tmp_path, environ={"BACKPORT_FORK_URL": "https://mirror.example/f.git"})
    named = bm.with_login("li-lei")
    assert (named.fork, named.fork_url) == ("li-lei/pytorch", "https://mirror.example/f.git")


def test_a_fork_set_in_the_file_is_kept_whatever_the_login(tmp_path: Path) -> None:
    bm = _load(tmp_path, "fork: some-org/pytorch\n")
    assert bm.with_login("li-lei") == bm
    assert bm.fork_url == "https://gitcode.com/some-org/pytorch.git"


def test_the_old_placeholder_is_read_as_not_set_with_a_warning(tmp_path: Path) -> None:
    bm = _load(tmp_path, f'fork: "{FORK_PLACEHOLDER}"\n')
    assert bm.fork == "" and bm.fork_url == ""
    assert bm.fork_note == (f"{tmp_path}/branches.yaml:3: fork is the old placeholder '{FORK_PLACEHOLDER}', "
                            "read as not set: the fork follows the token's login; delete the "
                            "line, or name your fork there (owner/repo)")


def test_a_login_that_makes_the_upstream_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the token's login Ascend makes it Ascend/pytorch, "
                                          "the upstream itself"):
        _load(tmp_path).with_login("Ascend")


def test_a_login_that_is_no_login_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BackportError, match="which is not a login"):
        _load(tmp_path).with_login("../x")
