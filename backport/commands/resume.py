"""`backport continue` and `backport abort`: finish or drop a branch that stopped."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from backport.commands.common import AppContext, pass_app, print_json
from backport.errors import EXIT_BRANCH_FAILED, EXIT_OK, ConfigError
from backport.pipeline.resume import abort_branches, finish_conflict, propagation_targets
from backport.pipeline.run import run_apply
from backport.pipeline.session import ApplyOptions, RunMode, Session
from backport.report.progress import Progress
from backport.report.summary import render_table, status_json


@click.command("continue")
@click.option("--api", "api", required=True, metavar="NAME", help="The patch set.")
@click.option("--branch", "branch", required=True, metavar="B", help="The target branch.")
@click.option("--save", is_flag=True,
              help="Also record the fixed commit as this branch's variant "
                   "(patches/NAME/B/), so the next run reproduces it.")
@click.option("--no-push", is_flag=True, help="Stop after the tests.")
@click.option("--no-pr", is_flag=True, help="Push but open no PR.")
@click.option("--skip-tests", is_flag=True, help="Do not run the tests.")
@click.option("--json", "as_json", is_flag=True, help="Print the final state as JSON.")
@pass_app
def continue_cmd(app: AppContext, api: str, branch: str, save: bool, no_push: bool, no_pr: bool,
                 skip_tests: bool, as_json: bool) -> None:
    """Finish a branch whose patch stopped on a conflict, after you fixed it by hand.

    \b
    1. Edit the conflicting files in the kept worktree (`backport status` shows where).
    2. Run this command: it concludes `git am`, then tests, pushes and opens the PR.

    The resolved commit is then tried on every other branch that conflicted or is not applied
    yet, nearest release first, where its own series does not apply, and passed on to older
    ones; the run table says which branches it served ("from the v2.12.0 resolution") and
    which still conflict.
    """
    app.resumable()
    project = app.project()
    session = Session(project)
    missing = [] if no_push else session.forge.real().missing()
    if missing:  # refused before `git am` is concluded: the branch is left as it was
        raise ConfigError(missing[0][0].upper() + missing[0][1:] + ".")
    flags = [flag for flag, on in (("--no-push", no_push), ("--no-pr", no_pr),
                                   ("--skip-tests", skip_tests)) if on]
    with Progress(quiet=app.quiet or as_json, verbose=app.verbose) as progress:
        finish_conflict(project, api, branch, progress, save=save)
        # `git am` is concluded: from here `apply` finishes what is left (`continue` would
        # find no conflict to continue)
        app.resumable(_apply_line(app, api, (branch,), flags))
        others = propagation_targets(project, api, branch, progress)
        app.resumable(_apply_line(app, api, (branch, *others), flags))
        options = ApplyOptions(branches=(branch, *others), skip_tests=skip_tests,
                               mode=RunMode.of_flags(no_push=no_push, no_pr=no_pr))
        (outcome,) = run_apply(project, [api], options, progress, session=session)
    if as_json:
        print_json(status_json(outcome.patch_set, outcome.records))
    else:
        render_table(outcome.records, app.console)
    raise SystemExit(EXIT_BRANCH_FAILED if outcome.failed else EXIT_OK)


def _apply_line(app: AppContext, api: str, branches: tuple[str, ...], flags: list[str]) -> str:
    """The `apply` command line finishing ``branches`` of ``api``, global options kept."""
    config = [] if app.config == Path("branches.yaml") else ["--config", str(app.config)]
    patches = [] if app.patches is None else ["--patches", str(app.patches)]
    return shlex.join(["backport", *config, *patches, "apply", "--api", api,
                       *(word for branch in branches for word in ("--branch", branch)), *flags])


@click.command("abort")
@click.option("--api", "api", required=True, metavar="NAME", help="The patch set.")
@click.option("--branch", "branches", multiple=True, metavar="B",
              help="Only this branch; repeatable. Default: every branch of the patch set.")
@pass_app
def abort_cmd(app: AppContext, api: str, branches: tuple[str, ...]) -> None:
    """Give up on branches: stop `git am`, remove their worktrees, forget their progress.

    The fork branches and PRs are not touched; the next `apply` starts those branches over and
    still updates the same fork branch and PR.
    """
    app.resumable()
    project = app.project()
    with Progress(quiet=app.quiet, verbose=app.verbose) as progress:
        done = abort_branches(project, api, branches, progress)
    app.console.print(f"aborted: {', '.join(done) if done else 'nothing to abort'}")
