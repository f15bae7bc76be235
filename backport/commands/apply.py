"""`backport apply`: the whole job for one or more patch sets (`pipeline/run.py` `run_apply`;
the sets of `--from-pr` made first: `pipeline/from_pr.py`)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import click

from backport.commands.common import AppContext, echo, pass_app, print_runs
from backport.config import load_patch_set, load_project
from backport.config.model import Project
from backport.errors import EXIT_BRANCH_FAILED, EXIT_OK, BackportError
from backport.pipeline.run import run_apply
from backport.pipeline.session import ApplyOptions, RunMode, Session
from backport.report.progress import Progress
from backport.report.summary import render_table, status_json


@click.command("apply")
@click.option("--api", "apis", multiple=True, metavar="NAME",
              help="Patch set to backport (a folder under patches/); repeat for a batch.")
@click.option("--from-pr", "from_prs", type=click.IntRange(min=1), multiple=True, metavar="N",
              help="Backport PR N of the upstream: make patches/pr-N/ (again, redoing every step, "
                   "once PR N changed; a dry run's in a temporary folder) and apply it. "
                   "Repeatable: one run; a PR that cannot be made into a set is named.")
@click.option("--all", "every", is_flag=True, help="Every patch set under patches/.")
@click.option("--branch", "branches", multiple=True, metavar="B",
              help="Only this target branch; repeatable. Default: the patch set's targets.")
@click.option("--dry-run", is_flag=True,
              help="Fetch, apply and test locally, then print what would be pushed and opened "
                   "and what the real run needs; no token or fork, nothing written in the project.")
@click.option("--no-push", is_flag=True,
              help="Stop after the tests; nothing leaves this machine.")
@click.option("--no-pr", is_flag=True, help="Push the fork branches but open no PR.")
@click.option("--skip-tests", is_flag=True,
              help="Run no test: a pass of the same commit, the series applied afresh, is kept "
                   "(a CI's publish step); else the PR body says the tests were not run.")
@click.option("--force", is_flag=True,
              help="Redo every step for every branch (re-apply, re-test, refresh the PR). "
                   "Never overwrites a fork branch someone else moved.")
@click.option("--overwrite-fork-branch", is_flag=True,
              help="Replace a fork branch even when someone else pushed to it.")
@click.option("--pr-on-failure", is_flag=True,
              help="Open a draft PR whose evidence shows a failing test.")
@click.option("--new-pr", is_flag=True,
              help="Open a new PR where the branch's recorded PR was closed or merged.")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="CPUs",
              help="Branches applied, tested and pushed at once; 0 (the default): one per CPU.")
@click.option("--isolated", is_flag=True,
              help="Run every test in a fresh interpreter instead of the warm worker.")
@click.option("--timeout", type=click.FloatRange(min=1), default=None,
              help="Seconds before a test is killed (default: the environment's timeout, 1800).")
@click.option("--json", "as_json", is_flag=True, help="Print the final state as JSON.")
@pass_app
def apply_cmd(app: AppContext, apis: tuple[str, ...], from_prs: tuple[int, ...], every: bool,
              dry_run: bool, no_push: bool, no_pr: bool, as_json: bool, **options: Any) -> None:
    """Backport patch sets to their target branches and open one PR per branch.

    For each target branch: fetch it from upstream, apply the patch series with `git am -3` on
    the fork branch, run the tests under the branch's environment, push to the fork (never to
    upstream) and find or create the PR, linked to the patch set's issue. Branches are
    independent: a conflict or failing test stops that branch only.

    \b
    Examples:
      backport apply --api put_metric
      backport apply --api put_metric --branch v2.7.1 --no-push
      backport apply --all --json
      backport apply --from-pr 42810
      backport apply --from-pr 42810 --from-pr 42811 --branch v2.7.1
    """
    app.resumable()
    app.project()  # a configuration error stops the command before anything is made
    mode = RunMode.of_flags(dry_run=dry_run, no_push=no_push, no_pr=no_pr)  # the rest: by name
    run(app, apis, from_prs, ApplyOptions(mode=mode, **options), every=every, as_json=as_json)


def run(app: AppContext, apis: tuple[str, ...], from_prs: tuple[int, ...],
        options: ApplyOptions, *, every: bool = False, as_json: bool = False,
        session: Session | None = None) -> None:
    """`apply` once its options are read (`trigger` passes its ``session``); exits."""
    plan_lines: list[str] = []
    session = session or Session(app.project(), options, environ=os.environ,
                                 plan=plan_lines.append)
    session.options = options
    try:
        scratch = session.scratch() / "sets" if options.mode.dry_run and from_prs else None
        if scratch is not None:
            scratch.mkdir()
        project, apis, unmade = _sets_from_prs(app, session, apis, from_prs, scratch,
                                               as_json=as_json)
        if project.branch_map.fork_note and options.mode.pushes:
            echo(f"warning: {project.branch_map.fork_note}", err=True)
        estimates: list[str] = []
        with Progress(quiet=app.quiet or as_json, verbose=app.verbose) as progress:
            outcomes = run_apply(project, list(apis), session.options, progress, every=every,
                                 estimate=estimates.append, session=session)
    finally:
        session.close()
    if as_json:
        print_runs([status_json(o.patch_set, o.records) for o in outcomes])
    else:
        for outcome in outcomes:
            if len(outcomes) > 1:
                app.console.print(f"[bold]{outcome.patch_set.name}[/bold]")
            render_table(outcome.records, app.console)
        if plan_lines:  # only a dry run plans
            echo("\nDry run: these writes were not made:")
            for line in plan_lines:
                echo(f"  {line}")
        for line in estimates:
            echo(f"\nThe real run: {line}.")
    if unmade:  # named above, before the run; the batch's exit says so too
        raise SystemExit(max(EXIT_BRANCH_FAILED, *(exc.exit_code for exc in unmade)))
    raise SystemExit(EXIT_BRANCH_FAILED if any(o.failed for o in outcomes) else EXIT_OK)


def _sets_from_prs(app: AppContext, session: Session, apis: tuple[str, ...],
                   from_prs: tuple[int, ...], scratch: Path | None, *, as_json: bool,
                   ) -> tuple[Project, tuple[str, ...], list[BackportError]]:
    """The project with the sets of ``from_prs`` made, the sets to run, the PRs' errors."""
    project, made, unmade = session.project, list[str](), list[BackportError]()
    say = lambda line: echo(line, err=as_json)  # noqa: E731 - beside --json's document
    if from_prs:
        from backport.pipeline.from_pr import sets_from_prs

        made, redo, unmade = sets_from_prs(session, app.patches or project.root / "patches",
                                           from_prs, say, lambda line: echo(line, err=True),
                                           scratch=scratch)
        if not made:
            raise SystemExit(max(exc.exit_code for exc in unmade))
        apis = (*apis, *(name for name in made if name not in apis))
        session.options = dataclasses.replace(session.options, redo=frozenset(redo))
        project = load_project(app.config, app.patches, os.environ)  # with the sets made
        if scratch is not None:  # the sets made there, in place of the project's own
            project = dataclasses.replace(project, patch_sets={**project.patch_sets, **{
                path.name: load_patch_set(path, project.branch_map)
                for path in sorted(scratch.iterdir()) if path.is_dir()}})
    for api in apis:  # a set made from a PR earlier says where it comes from, merged or not
        ps = project.patch_sets.get(api)
        if ps is not None and ps.source is not None and api not in made:
            from backport.pipeline.from_pr import source_line

            say(f"{api}: from {source_line(ps.source, project.branch_map.upstream)}")
    return project, apis, unmade
