"""The `backport` command line: global options, the commands (`COMMANDS`: a command's module
is imported only when it runs or shows its help), errors as one sentence and exit codes."""

from __future__ import annotations

import ast
import importlib
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

import click

from backport import __version__, process
from backport.commands.common import AppContext, pass_app
from backport.errors import EXIT_CODES, EXIT_INTERRUPTED, EXIT_USAGE, BackportError, ErrorCode
from backport.redact import redact

# Every command's click function in backport/commands/ (module:attribute).
COMMANDS = {
    "abort": "resume:abort_cmd",
    "apply": "apply:apply_cmd",
    "audit": "audit:audit_cmd",
    "check": "check:check_cmd",
    "continue": "resume:continue_cmd",
    "demo": "demo:demo_cmd",
    "docs": "docs:docs_cmd",
    "env": "env:env_group",
    "init": "init:init_cmd",
    "list": "listing:list_cmd",
    "matrix": "listing:matrix_cmd",
    "new": "new:new_cmd",
    "preview": "preview:preview_cmd",
    "status": "status:status_cmd",
    "trigger": "trigger:trigger_cmd",
}


class LazyGroup(click.Group):
    """The group of `COMMANDS`, each imported only when it runs or shows its own help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attribute = COMMANDS[cmd_name].partition(":")
            command = getattr(importlib.import_module(f"backport.commands.{module}"), attribute)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:  # click offers the commands it has loaded
            raise click.exceptions.NoSuchCommand(exc.command_name, ctx=ctx,
                                                 possibilities=self.list_commands(ctx)) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, (self.commands.get(name) or click.Command(
            name, help=_docstring(COMMANDS[name]))).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _docstring(spec: str) -> str | None:
    """The docstring of a command's click function, read from its module's source."""
    module, _, attribute = spec.partition(":")
    source = (Path(__file__).parent / "commands" / f"{module}.py").read_text(encoding="utf-8")
    return next(ast.get_docstring(node) for node in ast.parse(source).body
                if isinstance(node, ast.FunctionDef) and node.name == attribute)


@click.group(cls=LazyGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--config", "config", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("branches.yaml"), show_default=True, envvar="BACKPORT_CONFIG",
              help="The branch map; patches/ is found next to it.")
@click.option("--patches", "patches", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Patch sets folder (default: patches/ next to --config).")
@click.option("--debug", is_flag=True, expose_value=False,  # main() reads it, before click
              help="Show tracebacks for errors.")
@click.option("--quiet", "-q", is_flag=True, help="Only errors and the final table.")
@click.option("--verbose", "-v", is_flag=True, help="Every step's details.")
@click.version_option(__version__, prog_name="backport")
@pass_app
def cli(app: AppContext, config: Path, patches: Path | None, quiet: bool, verbose: bool) -> None:
    """Backport one API's test patch to every torch-npu release branch.

    \b
    backport reads branches.yaml (target branches, fork, environments) and patches/<name>/
    (patch.yaml + git format-patch files), then for every target branch: applies the patch on
    a fork branch with `git am -3`, runs its tests under that branch's torch / torch_npu,
    pushes to your fork and opens one PR per branch with the validation evidence.

    \b
    Start here:
      backport demo                      offline sandbox, the whole job end to end
      backport init DIR                  start a project: the real map and patches/
      backport check                     validate the branch map (CI)
      backport apply --api put_metric    the real thing
      backport status                    where each branch stands
    """
    app.config = config
    app.patches = patches
    app.quiet = quiet
    app.verbose = verbose


class _Interrupts:
    """Ctrl-C and SIGTERM until `restore`: the first interrupts main and exits 0.5 s later."""

    def __init__(self, app: AppContext) -> None:
        self.app, self.heard, self._exiting = app, False, threading.Lock()
        wanted = [signal.SIGTERM]
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            wanted.append(signal.SIGINT)
        self._saved = {signum: signal.signal(signum, self._heard) for signum in wanted}

    def restore(self) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)

    def _heard(self, signum: int, frame: object) -> None:
        if not self.heard:
            self.heard = True
            threading.Timer(0.5, self.exit).start()
            raise KeyboardInterrupt

    def exit(self) -> None:
        """Exit 130 with the interrupt message, once, not joining the threads still waiting."""
        if not self._exiting.acquire(blocking=False):
            threading.Event().wait()
        process.kill_running()  # git or a test still running for a branch thread goes too
        click.echo(self.app.interrupted_text(), err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; turn errors into one sentence and the contract's exit codes."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    app = AppContext()
    interrupts = _Interrupts(app)
    try:
        code = cli.main(args=argv, prog_name="backport", standalone_mode=False, obj=app)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = EXIT_USAGE
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        interrupts.exit()
    except BackportError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"error: {redact(exc.message)}", err=True)
        code = exc.exit_code
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # noqa: BLE001 - last line of defence: one sentence, not a trace
        if debug:
            traceback.print_exc()
        click.echo(f"error: internal error: {redact(str(exc))} (rerun with --debug for details)",
                   err=True)
        code = EXIT_CODES[ErrorCode.INTERNAL]
    finally:
        interrupts.restore()
    sys.exit(code or 0)
