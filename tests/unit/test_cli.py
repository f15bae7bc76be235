"""`backport`'s commands are imported only when one runs: the registry in cli.py names each
command's module, and `backport --help` lists them, with their one-line helps, as click would."""

from __future__ import annotations

import importlib
import pkgutil

import click
import pytest
from click.testing import CliRunner

import backport.commands
from backport.cli import COMMANDS, cli


def _real(name: str) -> click.Command:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None, name
    return command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_entry_names_its_command_whose_help_is_its_docstring(name: str) -> None:
    command = _real(name)
    assert command.name == name
    assert command.callback is not None and COMMANDS[name].endswith(command.callback.__name__)
    assert command.short_help is None  # the help is the docstring's first sentence, one place


def test_every_command_defined_in_the_commands_package_is_registered() -> None:
    """A command module's click command (or group, with its subcommands) is reachable from
    `cli`: a new command cannot be defined and left out of the registry."""
    defined = set()
    for info in pkgutil.iter_modules(backport.commands.__path__):
        module = importlib.import_module(f"backport.commands.{info.name}")
        defined |= {id(value) for value in vars(module).values()
                    if isinstance(value, click.Command)}
    reachable = set()
    for name in COMMANDS:
        command = _real(name)
        reachable.add(id(command))
        if isinstance(command, click.Group):
            reachable |= {id(sub) for sub in command.commands.values()}
    assert defined == reachable


@pytest.mark.parametrize("width", [50, 80, 100, 160])
def test_the_command_list_is_what_click_writes_from_the_commands_themselves(width: int) -> None:
    """The lazy list (from `COMMANDS`) against click's own (from the imported commands), each
    shortened to the width's limit as click shortens it."""
    ctx = click.Context(cli)
    for name in COMMANDS:
        _real(name)
    lazy, eager = click.HelpFormatter(width=width), click.HelpFormatter(width=width)
    cli.format_commands(ctx, lazy)
    click.Group.format_commands(cli, ctx, eager)
    assert lazy.getvalue() == eager.getvalue()
    assert lazy.getvalue().count("\n") >= len(COMMANDS)


def test_an_unknown_command_is_clicks_usage_error_with_its_suggestion() -> None:
    result = CliRunner().invoke(cli, ["aply"])
    assert result.exit_code == 2
    assert "No such command 'aply'. Did you mean 'apply'?" in result.output
    result = CliRunner().invoke(cli, ["nosuch", "--help"])
    assert result.exit_code == 2
    assert "No such command 'nosuch'." in result.output
    assert cli.get_command(click.Context(cli), "nosuch") is None


def test_a_command_is_imported_once_and_its_own_help_shown() -> None:
    assert _real("check") is _real("check")
    result = CliRunner().invoke(cli, ["check", "--help"], prog_name="backport")
    assert result.exit_code == 0
    assert "Usage: backport check [OPTIONS]" in result.output and "--offline" in result.output
