"""What every command shares: global options, project loading, output.

`backport` imports this module before it knows the command (cli.py), so what only some
commands use (the loader, the forge, rich) is imported where it is used.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from backport.errors import ConfigError
from backport.redact import redact

if TYPE_CHECKING:
    from rich.console import Console

    from backport.config.model import Project


@dataclass
class AppContext:
    """Global options, resolved once per invocation."""

    config: Path = Path("branches.yaml")
    patches: Path | None = None
    debug: bool = False
    quiet: bool = False
    verbose: bool = False
    # What running again does after an interrupt, for a command that journals its steps:
    # the command line to run and, where it runs elsewhere, the folder (see `resumable`).
    resume: str | None = None
    _project: Project | None = field(default=None, repr=False)

    def project(self) -> Project:
        """Load and validate branches.yaml and patches/ (ConfigError -> exit 2)."""
        if self._project is None:
            from backport.config import load_project
            self._project = load_project(self.config, self.patches, os.environ)
        return self._project

    def resumable(self, command: str | None = None) -> None:
        """This command journals its steps: after an interrupt, ``command`` (default: the
        command line as given) finishes what is left."""
        self.resume = command or shlex.join(["backport", *sys.argv[1:]])

    def interrupted_text(self) -> str:
        """What to say when this command is interrupted (see `interrupted_message`)."""
        return interrupted_message(self.resume)

    def reload(self) -> Project:
        """The project read again (after a command wrote a patch set)."""
        self._project = None
        return self.project()

    def pushing_project(self) -> Project:
        """The project of a command that pushes: refused while the forge has no token
        (`apply` names it among its other prerequisites: `pipeline.run.check_prerequisites`)."""
        from backport.pipeline.session import Session
        project = self.project()
        missing = Session(project).forge.missing()
        if missing:
            raise ConfigError(missing[0][0].upper() + missing[0][1:] + ".")
        return project

    @property
    def console(self) -> Console:
        from rich.console import Console
        # Off a terminal rich assumes 80 columns; tables of branch names and URLs need more.
        width = None if sys.stdout.isatty() else 160
        return Console(highlight=False, no_color=bool(os.environ.get("NO_COLOR")), width=width)

    @property
    def err_console(self) -> Console:
        from rich.console import Console
        return Console(stderr=True, highlight=False, no_color=bool(os.environ.get("NO_COLOR")))


pass_app = click.make_pass_decorator(AppContext, ensure=True)


def print_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout, secrets redacted."""
    click.echo(redact(json.dumps(data, indent=2, ensure_ascii=False, default=str)))


def broken_subject(name: str) -> str:
    """How reports name a patch set folder: ``patches/<name>``."""
    return f"patches/{name}"


def echo(text: str = "", *, err: bool = False) -> None:
    click.echo(redact(text), err=err)


def interrupted_message(resume: str | None) -> str:
    """What an interrupt leaves: ``resume``, the command that finishes what is left (None for a
    command that keeps no journal). Nothing of the run goes on running: its warm workers and
    tests end with it (``envs/sandbox.py``)."""
    if resume is None:
        return "interrupted"
    return ("interrupted: every finished step is in the run's journal; this finishes what is "
            f"left (a step cut off midway is done again):\n  {resume}")
