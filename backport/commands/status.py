"""`backport status`: the per-branch state of the last run."""

from __future__ import annotations

import click

from backport.commands.common import AppContext, broken_subject, echo, pass_app, print_json
from backport.errors import EXIT_BRANCH_FAILED, EXIT_OK
from backport.pipeline.apply import select_patch_sets, select_targets
from backport.pipeline.journal import Journal
from backport.records import BranchRecord
from backport.report.summary import render_table, status_json
from backport.states import FAILURES


@click.command("status")
@click.option("--api", "apis", multiple=True, metavar="NAME",
              help="Patch set(s) to show; default: every patch set that has been run.")
@click.option("--branch", "branches", multiple=True, metavar="B",
              help="Only this target branch; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
@pass_app
def status_cmd(app: AppContext, apis: tuple[str, ...], branches: tuple[str, ...],
               as_json: bool) -> None:
    """Show where every target branch stands: status, commit, test result, PR.

    Read from the run journal (.backport/runs/<patch-set>/journal.json); nothing is fetched.
    Exit 0 when every branch shown is done (or needs no PR), 1 when one of them failed or
    stopped, as `apply` does.
    """
    project = app.project()
    patch_sets = select_patch_sets(project, list(apis)) if apis else [
        ps for ps in project.patch_sets.values()
        if (project.state_dir / "runs" / ps.name / "journal.json").exists()]
    chosen = select_targets(patch_sets, branches) if patch_sets else {}
    payload = []
    for ps in patch_sets:
        journal = Journal.load(project.state_dir, ps.name, ps.api, persist=False)
        payload.append((ps, journal.records(chosen[ps.name])))
    failed = any(_failed(r) for _, records in payload for r in records)
    if not apis:  # a set run before that cannot be read now is a problem of its own
        for name, message in sorted(project.broken.items()):
            if (project.state_dir / "runs" / name / "journal.json").exists():
                echo(f"problem: {broken_subject(name)}: {message}", err=True)
                failed = True
    if as_json:
        data = [status_json(ps, records) for ps, records in payload]
        print_json(data[0] if len(data) == 1 else {"runs": data})
    elif not payload:
        echo("No runs yet: start one with `backport apply --api NAME`.")
    else:
        for ps, records in payload:
            app.console.print(f"[bold]{ps.name}[/bold] ({ps.api})")
            if records:
                render_table(records, app.console)
            else:
                echo("  not run yet")
    raise SystemExit(EXIT_BRANCH_FAILED if failed else EXIT_OK)


def _failed(record: BranchRecord) -> bool:
    return record.status in FAILURES
