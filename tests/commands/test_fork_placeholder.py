"""The shipped map's fork is a placeholder: `check` warns (CI stays green), pushing commands refuse."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backport.config.branch_map import FORK_PLACEHOLDER
from backport.demo.sandbox import Sandbox
from tests.helpers.project import ROOT, edit_config, git, run_app, run_cli


def _fork_line(config: Path) -> int:
    lines = config.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith("fork:"))


def _prs(sandbox: Sandbox) -> int:
    forge = sandbox.project / ".backport" / "forge.sqlite"
    if not forge.exists():
        return 0
    with sqlite3.connect(forge) as db:
        (count,) = db.execute("SELECT count(*) FROM prs").fetchone()
    return count


def _set_your_fork(config: str, line: int) -> str:
    return (f"{config}:{line}: fork is the shipped placeholder '{FORK_PLACEHOLDER}'; set your "
            "fork: the key fork names your own fork of Ascend/pytorch (owner/repo)")


def test_check_offline_on_the_shipped_map_warns_and_passes(tmp_path: Path) -> None:
    result = run_cli(ROOT, "check", "--offline", "--json",
                     env={"BACKPORT_ENVS": str(tmp_path / "none")})
    assert result.code == 0, result.err
    report = result.json()
    assert report["ok"] is True
    expected = _set_your_fork("branches.yaml", _fork_line(ROOT / "branches.yaml"))
    assert [w for w in report["warnings"] if "fork" in w] == [f"fork: {expected}"]


@pytest.mark.parametrize("args", [["apply", "--api", "put_metric"],
                                  ["apply", "--api", "put_metric", "--dry-run"],
                                  ["apply", "--all", "--no-pr", "--skip-tests"],
                                  ["continue", "--api", "put_metric", "--branch", "master"]])
def test_pushing_commands_refuse_the_placeholder_and_push_nothing(sandbox: Sandbox,
                                                                  args: list[str]) -> None:
    edit_config(sandbox, lambda data: data.update(fork=FORK_PLACEHOLDER))
    result = run_app(sandbox.project, *args)
    assert result.code == 2, result.err
    expected = _set_your_fork("branches.yaml", _fork_line(sandbox.config))
    assert result.err.strip() == f"error: {expected}"
    assert git(sandbox.fork, "for-each-ref") == ""  # nothing pushed
    assert _prs(sandbox) == 0


def test_a_run_that_does_not_push_needs_no_fork(sandbox: Sandbox) -> None:
    edit_config(sandbox, lambda data: data.update(fork=FORK_PLACEHOLDER))
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--no-push", "--skip-tests")
    assert result.code == 0, result.err
    assert git(sandbox.fork, "for-each-ref") == ""


def test_apply_names_the_fork_with_every_other_missing_thing(sandbox: Sandbox, gitcode) -> None:
    edit_config(sandbox, lambda data: data.update(fork=FORK_PLACEHOLDER))
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert result.code == 2, result.err
    (line,) = result.err.strip().splitlines()
    fork = _set_your_fork("branches.yaml", _fork_line(sandbox.config))
    assert line.startswith(f"error: 2 things are missing before the run can start: {fork}; and "
                           "no GitCode token for "), line
    assert gitcode.requests == []  # stopped before asking the forge anything


def test_a_fork_set_by_the_user_is_taken_without_a_word(sandbox: Sandbox) -> None:
    result = run_app(sandbox.project, "check", "--offline", "--json")
    assert result.code == 0, result.err
    assert not any("fork" in w for w in result.json()["warnings"])
