"""The README's exit codes hold for every command: 2 for usage and configuration errors (an
unknown option, no branches.yaml, a broken one), before any repository is touched."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from backport.cli import cli
from tests.helpers.project import run_app

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
    "docs": ["--api", "torch.a.b"],
    "matrix": ["--api", "put_metric"],
    "preview": ["--api", "put_metric"],
    "demo": None,
    "init": None,
    "trigger": ["--event", "{event}"],
    "audit": ["--offline"],
}


def commands(group: click.Group = cli, prefix: str = "") -> list[str]:
    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
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
