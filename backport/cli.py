"""The `backport` command line: global options, command registry, error handling."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path

import click

from backport import __version__, process
from backport.commands.apply import apply_cmd
from backport.commands.audit import audit_cmd
from backport.commands.check import check_cmd
from backport.commands.common import AppContext, pass_app
from backport.commands.demo import demo_cmd
from backport.commands.docs import docs_cmd
from backport.commands.env import env_group
from backport.commands.init import init_cmd
from backport.commands.listing import list_cmd, matrix_cmd
from backport.commands.new import new_cmd
from backport.commands.preview import preview_cmd
from backport.commands.resume import abort_cmd, continue_cmd
from backport.commands.status import status_cmd
from backport.commands.trigger import trigger_cmd
from backport.errors import EXIT_CODES, EXIT_INTERRUPTED, EXIT_USAGE, BackportError, ErrorCode
from backport.redact import redact

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.option("--config", "config", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("branches.yaml"), show_default=True, envvar="BACKPORT_CONFIG",
              help="The branch map; patches/ is found next to it.")
@click.option("--patches", "patches", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Patch sets folder (default: patches/ next to --config).")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.option("--quiet", "-q", is_flag=True, help="Only errors and the final table.")
@click.option("--verbose", "-v", is_flag=True, help="Every step's details.")
@click.version_option(__version__, prog_name="backport")
@pass_app
def cli(app: AppContext, config: Path, patches: Path | None, debug: bool, quiet: bool,
        verbose: bool) -> None:
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
    app.debug = debug
    app.quiet = quiet
    app.verbose = verbose


for command in (apply_cmd, check_cmd, status_cmd, continue_cmd, abort_cmd, list_cmd, new_cmd,
                env_group, docs_cmd, matrix_cmd, preview_cmd, demo_cmd, init_cmd, trigger_cmd,
                audit_cmd):
    cli.add_command(command)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM stops a run the way Ctrl-C does: cleanly, resumable, exit 130."""
    raise KeyboardInterrupt


def _exit_interrupted(app: AppContext) -> None:
    """Ctrl-C or SIGTERM: exit 130 at once, saying what a re-run does and what stays running.

    Branch threads or the main thread may still be waiting on git, a test or the forge; exiting
    without joining them keeps the interrupt prompt, and the journal already holds every
    finished step.
    """
    process.kill_running()  # git or a test still running for a branch thread goes too
    click.echo(app.interrupted_text(), err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; turn errors into one sentence and the contract's exit codes."""
    signal.signal(signal.SIGTERM, _terminate)
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    app = AppContext()
    try:
        code = cli.main(args=argv, prog_name="backport", standalone_mode=False, obj=app)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = EXIT_USAGE
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        _exit_interrupted(app)
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
    sys.exit(code or 0)
