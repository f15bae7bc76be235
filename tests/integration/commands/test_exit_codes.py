"""The README's exit codes hold for every command: 2 for usage and configuration errors, 1 for a
branch that did not get through (status: not finished), 0 when every branch is done."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from backport.cli import cli
from tests.helpers.project import run_app
from tests.helpers.runs import apply

# Each command with arguments that would run it in a project; None: it needs no project.
ARGS: dict[str, list[str] | None] = {
    "apply": ["--api", "put_metric"],
    "check": [],
    "status": [],
    "continue": ["--api", "put_metric", "--branch", "master"],
    "abort": ["--api", "put_metric"],
    "list": [],
    "new": ["x", "--from", "HEAD", "--api", "a.b", "--issue", "1"],
    "env probe": [],
    "env setup": ["--dry-run"],
    "env stop": None,
    "docs": ["--api", "torch.a.b"],
    "matrix": ["--api", "put_metric"],
    "preview": ["--api", "put_metric"],
    "demo": None,
    "init": None,
    "trigger": ["--event", "{event}"],
}


def commands(group: click.Group = cli, prefix: str = "") -> list[str]:
    found = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += commands(command, f"{prefix}{name} ")
        else:
            found.append(f"{prefix}{name}")
    return found


def test_every_command_is_walked() -> None:
    assert sorted(commands()) == sorted(ARGS)


@pytest.mark.parametrize("command", sorted(ARGS))
def test_an_unknown_option_exits_2(command: str, tmp_path: Path) -> None:
    result = run_app(tmp_path, *command.split(), "--no-such-option")
    assert result.code == 2, result.err
    assert "--no-such-option" in result.err


def _args(command: str, tmp_path: Path) -> list[str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "merge", "pull_request": {"number": "5",
                                                                     "state": "merged"}}))
    given = ARGS[command]
    assert given is not None
    return [*command.split(), *(a.replace("{event}", str(event)) for a in given)]


@pytest.mark.parametrize("command", sorted(c for c, a in ARGS.items() if a is not None))
def test_without_branches_yaml_every_project_command_exits_2_naming_init(
        command: str, tmp_path: Path) -> None:
    result = run_app(tmp_path, *_args(command, tmp_path))
    assert result.code == 2, result.err
    assert result.err.count("error:") == 1
    assert "`backport init`" in result.err, result.err


@pytest.mark.parametrize("command", sorted(c for c, a in ARGS.items() if a is not None))
def test_a_broken_branches_yaml_exits_2_naming_its_line(command: str, tmp_path: Path) -> None:
    (tmp_path / "branches.yaml").write_text("forge: local\nupstream: {a: 1\n", encoding="utf-8")
    result = run_app(tmp_path, *_args(command, tmp_path))
    assert result.code == 2, result.err
    assert "branches.yaml:2: YAML syntax error" in result.err, result.err


def test_new_with_a_missing_repo_folder_exits_2(sandbox, tmp_path: Path) -> None:
    result = run_app(sandbox.project, "new", "x", "--from", "HEAD", "--repo",
                     str(tmp_path / "missing"), "--api", "a.b", "--issue", "1")
    assert result.code == 2, result.err
    assert result.err.strip() == (f"error: --repo {tmp_path / 'missing'}: no such folder; name "
                                  "the clone that holds the commits of --from HEAD")


def test_trigger_and_apply_without_a_token_exit_2(sandbox, tmp_path: Path) -> None:
    from tests.helpers.project import edit_config

    def to_gitcode(data: dict) -> None:
        data["forge"] = "gitcode"
        data["api_url"] = "http://127.0.0.1:9/api/v5"
    edit_config(sandbox, to_gitcode)
    no_token = {"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "", "HOME": str(tmp_path)}
    event = _args("trigger", tmp_path)[-1]
    result = run_app(sandbox.project, "trigger", "--event", event, env=no_token)
    assert result.code == 2, result.err
    applied = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                      env=no_token)
    assert applied.code == 2, applied.err
    assert "no GitCode token" in applied.err


def test_status_exits_1_while_a_branch_is_not_finished_and_0_once_all_are(sandbox) -> None:
    apply(sandbox, skip_tests=True, no_push=True)  # stopped before the push, as an interrupt
    assert run_app(sandbox.project, "status").code == 1
    apply(sandbox, skip_tests=True)
    done = run_app(sandbox.project, "status")
    assert done.code == 0, done.out + done.err
