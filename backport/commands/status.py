"""`backport status`: the per-branch state of the last run."""

from __future__ import annotations

import click
from rich.table import Table

from backport.commands.common import AppContext, echo, pass_app, print_runs, report_broken
from backport.config.model import PatchSet, Project
from backport.errors import EXIT_BRANCH_FAILED, EXIT_OK, EXIT_USAGE
from backport.pipeline.journal import Journal, select_patch_sets, select_targets
from backport.pipeline.pr_step import forge_status
from backport.pipeline.session import Session
from backport.report.summary import render_table, status_json


@click.command("status")
@click.option("--api", "apis", multiple=True, metavar="NAME",
              help="Patch set(s) to show; default: every patch set that has been run.")
@click.option("--branch", "branches", multiple=True, metavar="B",
              help="Only this target branch; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the state as JSON.")
@click.option("--from-forge", is_flag=True,
              help="Show the set as GitCode shows it: each branch's open PR, result and tested "
                   "commit, wherever it ran (needs --api and the forge token).")
@pass_app
def status_cmd(app: AppContext, apis: tuple[str, ...], branches: tuple[str, ...],
               as_json: bool, from_forge: bool) -> None:
    """Show where every target branch stands: status, commit, test result, PR.

    Read from the run journal (.backport/runs/<patch-set>/journal.json), nothing fetched; with
    --from-forge from the open PRs of the set (their evidence blocks). Exit 0 when every branch
    shown is done (or needs no PR); 1 when one failed or is not finished (a run interrupted or
    stopped before its PR; --from-forge: no open PR or a failing result); 2 when a patch set
    cannot be read (named on a `problem:` line).
    """
    project = app.project()
    if from_forge:
        _from_forge(app, project, select_patch_sets(project, list(apis)), branches, as_json)
    patch_sets = select_patch_sets(project, list(apis)) if apis else [
        ps for ps in project.patch_sets.values()
        if (project.state_dir / "runs" / ps.name / "journal.json").exists()]
    chosen = select_targets(patch_sets, branches) if patch_sets else {}
    payload = [(ps, Journal.load(project.state_dir, ps.name, ps.api, persist=False).records(
        chosen[ps.name])) for ps in patch_sets]
    unfinished = any(not r.status.ok for _, records in payload for r in records)
    broken = not apis and report_broken(project)  # a set that cannot be read: a problem
    if as_json:
        print_runs([status_json(ps, records) for ps, records in payload])
    elif not payload:
        echo("No runs yet: start one with `backport apply --api NAME`.")
    else:
        for ps, records in payload:
            app.console.print(f"[bold]{ps.name}[/bold] ({ps.api or 'no API'})")
            if records:
                render_table(records, app.console)
            else:
                echo("  not run yet")
    raise SystemExit(EXIT_USAGE if broken else EXIT_BRANCH_FAILED if unfinished else EXIT_OK)


def _from_forge(app: AppContext, project: Project, patch_sets: list[PatchSet],
                branches: tuple[str, ...], as_json: bool) -> None:
    """Each branch of the named sets as its open PR shows it; exits."""
    bm = project.branch_map
    shown = forge_status(Session(project), patch_sets, select_targets(patch_sets, branches))
    failed = any(row["pr"] is None or row["ok"] is False for _, rows in shown for row in rows)
    if as_json:
        print_runs([{"patch_set": ps.name, "api": ps.api, "source": "forge", "branches": rows}
                    for ps, rows in shown])
    else:
        for ps, rows in shown:
            app.console.print(f"[bold]{ps.name}[/bold] ({ps.api or 'no API'}) as {bm.upstream} shows it")
            table = Table("target", "PR", "result", "tested commit", "fork head", "platform")
            for row in rows:
                pr = row["pr"]
                tested = (row["tested_commit"] or "")[:12]
                table.add_row(row["target"],
                              "no open PR" if pr is None else
                              f"!{pr['number']}{' (draft)' if pr['draft'] else ''} {pr['url']}",
                              row["result"], tested + (" (stale)" if row["stale"] else ""),
                              (row["head_commit"] or "")[:12], row["platform"] or "")
            app.console.print(table)
    raise SystemExit(EXIT_BRANCH_FAILED if failed else EXIT_OK)
