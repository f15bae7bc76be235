"""`backport status`: the per-branch state of the last run."""

from __future__ import annotations

import click

from backport.commands.common import AppContext, echo, pass_app, print_json
from backport.pipeline.apply import select_patch_sets
from backport.pipeline.journal import Journal
from backport.report.summary import render_table, status_json


@click.command("status")
@click.option("--api", "apis", multiple=True, metavar="NAME",
              help="Patch set(s) to show; default: every patch set that has been run.")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
@pass_app
def status_cmd(app: AppContext, apis: tuple[str, ...], as_json: bool) -> None:
    """Show where every target branch stands: status, commit, test result, PR.

    Read from the run journal (.backport/runs/<patch-set>/journal.json); nothing is fetched.
    """
    project = app.project()
    patch_sets = select_patch_sets(project, list(apis)) if apis else [
        ps for ps in project.patch_sets.values()
        if (project.state_dir / "runs" / ps.name / "journal.json").exists()]
    payload = []
    for ps in patch_sets:
        journal = Journal.load(project.state_dir, ps.name, ps.api, persist=False)
        records = journal.records([t for t in ps.branches])
        payload.append((ps, records))
    if as_json:
        data = [status_json(ps, records) for ps, records in payload]
        print_json(data[0] if len(data) == 1 else {"runs": data})
        return
    if not payload:
        echo("No runs yet: start one with `backport apply --api NAME`.")
        return
    for ps, records in payload:
        app.console.print(f"[bold]{ps.name}[/bold] ({ps.api})")
        if records:
            render_table(records, app.console)
        else:
            echo("  not run yet")
