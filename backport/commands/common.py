"""What every command shares: global options, project loading, output."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from backport.config import load_project
from backport.config.model import Project
from backport.errors import BackportError
from backport.forge import make_forge
from backport.redact import redact


@dataclass
class AppContext:
    """Global options, resolved once per invocation."""

    config: Path = Path("branches.yaml")
    patches: Path | None = None
    debug: bool = False
    quiet: bool = False
    verbose: bool = False
    journaled: bool = False  # the command records its steps in a run journal (resumable)
    _project: Project | None = field(default=None, repr=False)

    def project(self) -> Project:
        """Load and validate branches.yaml and patches/ (ConfigError -> exit 2)."""
        if self._project is None:
            self._project = load_project(self.config, self.patches, os.environ)
        return self._project

    def reload(self) -> Project:
        """The project read again (after a command wrote a patch set)."""
        self._project = None
        return self.project()

    def pushing_project(self) -> Project:
        """The project of a command that pushes: refused while the forge has no token
        (`apply` names it among its other prerequisites: `pipeline.apply.check_prerequisites`)."""
        project = self.project()
        missing = make_forge(project.branch_map, project.state_dir, environ=os.environ).missing()
        if missing:
            raise BackportError("auth", missing[0][0].upper() + missing[0][1:] + ".")
        return project

    @property
    def console(self) -> Console:
        # Off a terminal rich assumes 80 columns; tables of branch names and URLs need more.
        width = None if sys.stdout.isatty() else 160
        return Console(highlight=False, no_color=bool(os.environ.get("NO_COLOR")), width=width)

    @property
    def err_console(self) -> Console:
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
