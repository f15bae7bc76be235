"""`backport list` and `backport matrix`: what there is to backport, and the CI's jobs
(`report/ci_matrix.py`; the shipped workflows: examples/ci/, docs/ci.md)."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from backport.commands.common import AppContext, echo, pass_app, print_json, report_broken
from backport.errors import EXIT_USAGE, BackportError
from backport.pipeline.journal import select_patch_sets
from backport.report import ci_matrix


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@pass_app
def list_cmd(app: AppContext, as_json: bool) -> None:
    """List patch sets, their APIs, issues and target branches (variants marked *).

    A patch set that cannot be read is named on a `problem:` line and the others are listed;
    the exit code is then 2, as for any configuration error.
    """
    project = app.project()
    bm = project.branch_map
    rows: list[dict[str, Any]] = [{
        "name": ps.name, "api": ps.api, "issues": list(ps.issues), "title": ps.title,
        "device": ps.device, "patches": len(ps.patches),
        "branches": [{"target": t, "env": bm.targets[t].env, "variant": t in ps.variants,
                      "fork_branch": ps.fork_branch(bm, t)} for t in ps.branches],
    } for ps in project.patch_sets.values()]
    if as_json:
        print_json(rows)
    elif not rows and not project.broken:
        echo(f"No patch sets under {project.root / 'patches'}; create one with `backport new`.")
    elif rows:
        table = Table("patch set", "api", "issue", "targets (* = variant)")
        for row in rows:
            targets = ", ".join(b["target"] + ("*" if b["variant"] else "") for b in row["branches"])
            table.add_row(row["name"], row["api"] or "—",
                          ", ".join(f"#{i}" for i in row["issues"]) or "—", targets)
        app.console.print(table)
    if report_broken(project):
        raise SystemExit(EXIT_USAGE)


@click.command("matrix")
@click.option("--api", "apis", multiple=True, metavar="NAME", help="Patch set(s).")
@click.option("--all", "every", is_flag=True, help="Every patch set.")
@click.option("--format", "fmt", type=click.Choice(["json", "github", "gitcode"]), default="json",
              show_default=True,
              help="json: a list; github: {include: [...]} for a job matrix (fromJSON); "
                   "gitcode: the whole GitCode pipeline, one job per target.")
@click.option("--trigger", is_flag=True,
              help="The `/backport` jobs instead: one per target of the map, each running "
                   "`backport trigger --branch B` after the `trigger --plan` job (gitcode: the "
                   "whole trigger pipeline; GitCode's events only, so not --format github).")
@pass_app
def matrix_cmd(app: AppContext, apis: tuple[str, ...], every: bool, fmt: str,
               trigger: bool) -> None:
    """Print a CI job matrix: one job per patch set and target branch.

    Each job runs `backport apply --api NAME --branch B` on the runner tags (`runs_on`) and
    container image of its environment's `ci:` entry in branches.yaml (default: the tags
    `self-hosted` and the environment's name). The forge's find-or-create keeps parallel jobs
    from opening the same PR twice.
    """
    project = app.project()
    if trigger and (apis or every):
        raise BackportError("usage", "--trigger makes one job per target of the map; it takes "
                                     "no --api or --all")
    if trigger and fmt == "github":
        raise BackportError("usage", "--trigger writes GitCode's `/backport` pipeline "
                                     "(--format gitcode or json): backport trigger reads "
                                     "GitCode's events only")
    jobs = (ci_matrix.trigger_jobs(project.branch_map) if trigger else
            ci_matrix.matrix_jobs(project.branch_map, select_patch_sets(project, list(apis), every)))
    if fmt == "json":
        print_json([job.to_dict() for job in jobs])
    elif fmt == "github":
        click.echo(ci_matrix.github_matrix(jobs))
    elif trigger:
        click.echo(ci_matrix.gitcode_trigger_pipeline(jobs), nl=False)
    else:
        selection = "--all" if every else " ".join(f"--api {name}" for name in apis)
        click.echo(ci_matrix.gitcode_pipeline(jobs, selection), nl=False)
