"""What every command shares: global options, project loading, output. Imported before the
command is known, so what only some use (the loader, the forge, rich) is imported where used."""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from backport.redact import redact

if TYPE_CHECKING:
    from rich.console import Console

    from backport.config.model import Project


@dataclass
class AppContext:
    """Global options, resolved once per invocation."""

    config: Path = Path("branches.yaml")
    patches: Path | None = None
    quiet: bool = False
    verbose: bool = False
    resume: str | None = None  # the command that finishes what an interrupt left (`resumable`)
    _project: Project | None = field(default=None, repr=False)

    def project(self) -> Project:
        """Load and validate branches.yaml and patches/ (ConfigError -> exit 2)."""
        if self._project is None:
            from backport.config import load_project
            self._project = load_project(self.config, self.patches, os.environ)
        return self._project

    def resumable(self, command: str | None = None) -> None:
        """After an interrupt, ``command`` (default: this command line) finishes what is left."""
        self.resume = command or shlex.join(["backport", *sys.argv[1:]])

    def interrupted_text(self) -> str:
        """What an interrupt says: the command that finishes what is left."""
        if self.resume is None:
            return "interrupted"
        return ("interrupted: every finished step is in the run's journal; this finishes what "
                f"is left (a step cut off midway is done again):\n  {self.resume}")

    @property
    def console(self) -> Console:
        from rich.console import Console
        width = None if sys.stdout.isatty() else 160  # off a terminal rich assumes 80 columns
        return Console(highlight=False, no_color=bool(os.environ.get("NO_COLOR")), width=width)


pass_app = click.make_pass_decorator(AppContext, ensure=True)


def print_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout, secrets redacted."""
    click.echo(redact(json.dumps(data, indent=2, ensure_ascii=False, default=str)))


def print_runs(runs: list[dict]) -> None:
    """The JSON of one patch set's run, or ``{"runs": [...]}`` of several."""
    print_json(runs[0] if len(runs) == 1 else {"runs": runs})


def echo(text: str = "", *, err: bool = False) -> None:
    click.echo(redact(text), err=err)


def report_broken(project: Project) -> bool:
    """A `problem: patches/<name>: …` line per unreadable patch set; whether there was one."""
    for name, message in sorted(project.broken.items()):
        echo(f"problem: patches/{name}: {message}", err=True)
    return bool(project.broken)
