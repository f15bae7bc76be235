"""`backport demo`: the whole job offline, in a sandbox folder (`demo/sandbox.py`)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click
from rich.table import Table

from backport.commands.common import AppContext, echo, pass_app
from backport.config import load_project
from backport.demo.sandbox import demo_session, find_patch_set, find_torch_python
from backport.errors import EXIT_BRANCH_FAILED, EXIT_OK
from backport.pipeline.run import run_apply
from backport.report.progress import Progress
from backport.report.summary import render_table


@click.command("demo")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Build the sandbox here (empty, or a previous demo's, which is "
                                 "replaced); default: demo/ in the cache folder "
                                 "($BACKPORT_CACHE or the user cache folder).")
@click.option("--python", "python", default=None, metavar="PATH",
              help="Interpreter with torch (+ expecttest) for the tests; default: "
                   "$BACKPORT_DEMO_PYTHON, .ci/venvs/torch-2.13.0 of the source checkout (when "
                   "installed from one in place), or this Python if it has torch.")
@click.option("--from-pr", "from_pr", is_flag=True,
              help="Start from a PR instead: the sandbox's master holds put_metric as a merged "
                   "PR (squash-merged as GitCode does), which `apply --from-pr` backports to the "
                   "three other branches.")
@pass_app
def demo_cmd(app: AppContext, directory: Path | None, python: str | None, from_pr: bool) -> None:
    """Run `apply --api put_metric` end to end, offline, in a sandbox.

    Builds a local upstream repository with the branches v2.7.1, v2.11.0, v2.12.0 and master,
    an empty fork and the embedded local forge, then applies the put_metric patch set to all
    four, runs its test when an interpreter with torch is at hand, pushes to the local fork and
    opens four PRs. Nothing leaves this machine.

    With --from-pr the change starts as a PR squash-merged into the local upstream's master:
    `apply --from-pr` finds what landed and opens three PRs, each naming the source PR.
    """
    patches = find_patch_set(app.patches)
    torch_python = find_torch_python(python)
    with demo_session(directory, patches, torch_python, from_pr=from_pr, say=echo) as (
            session, sandbox, replaced, name):
        echo(f"sandbox: {sandbox.root}" + (" (the previous demo's sandbox there was replaced)"
                                           if replaced else ""))
        echo(f"tests run under: {torch_python}" if torch_python else "no interpreter with torch "
             "found: the tests are skipped, and the PR bodies say so (pass --python PATH to "
             "include them)")
        project = load_project(sandbox.config, None, os.environ)  # with the set made from a PR
        exe = Path(sys.executable).parent / "backport"
        cmd = str(exe) if exe.exists() else "backport"
        # The sandbox's journal names commits of the sandbox's own cache repository: the commands
        # printed for it pin that cache, so a re-run there keeps what the demo did.
        here = (f"cd {shlex.quote(str(sandbox.project))} && "
                f"BACKPORT_CACHE={shlex.quote(str(sandbox.cache))} {cmd}")
        app.resumable(f"{here} apply --api {name}"
                      + (" --skip-tests" if session.options.skip_tests else ""))
        with Progress(quiet=app.quiet, verbose=app.verbose) as progress:
            (outcome,) = run_apply(project, [name], session.options, progress, session=session)
        render_table(outcome.records, app.console)
        forge = session.forge.real()
        prs = forge.list_prs("open")
        table = Table("#", "head → base", "title", "linked issues",
                      title=f"PRs in the local forge ({len(prs)})", title_justify="left")
        for pr in prs:
            table.add_row(str(pr.number), f"{pr.head_repo}:{pr.head} → {pr.base}", pr.title,
                          ", ".join(f"#{n}" for n in forge.linked_issues(pr.number)))
        app.console.print(table)
        echo("where to look:")
        echo(f"  fork branches:  git --git-dir {sandbox.fork} log --oneline --all")
        echo(f"  PR bodies:      {here} preview --api {name} "
             f"--branch {outcome.patch_set.branches[-1]}")
        echo(f"  branch state:   {here} status")
        echo(f"  run it again:   {app.resume}")
        echo(f"  test logs:      {project.state_dir / 'runs' / name / 'logs'}")
        echo(f"The sandbox stays in {sandbox.root} until the next demo there replaces it.")
        raise SystemExit(EXIT_BRANCH_FAILED if outcome.failed else EXIT_OK)
