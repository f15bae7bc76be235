"""`backport check`: validate the branch map for CI without writing anything remote
(`pipeline/check.py` `run_check`); the table, the JSON and the CI's step summary here."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import click
from rich.table import Table

from backport.commands.common import AppContext, echo, pass_app, print_json
from backport.errors import EXIT_BRANCH_FAILED, EXIT_OK, EXIT_USAGE
from backport.pipeline.check import Finding, run_check, summary_markdown
from backport.pipeline.journal import select_patch_sets
from backport.pipeline.session import Session
from backport.redact import redact


@click.command("check")
@click.option("--api", "apis", multiple=True, metavar="NAME", help="Only these patch sets.")
@click.option("--offline", is_flag=True,
              help="No network: check the map, the patch sets, the environments and the fork's "
                   "name, but not the upstream branches, the applies or the token's login.")
@click.option("--envs", is_flag=True,
              help="Also require every branch's environment on this machine (an NPU host).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable result for CI.")
@pass_app
def check_cmd(app: AppContext, apis: tuple[str, ...], offline: bool, envs: bool,
              as_json: bool) -> None:
    """Check branches.yaml and every patch set: schema, target branches, clean apply.

    Confirms every branch of the map exists upstream and every patch set applies with
    `git am -3` on each target, in a temporary worktree. An environment not built here is a
    warning (`--envs`: a problem). Names the fork the real run pushes to (where branches.yaml
    leaves it to the token: its login, one GET /user); nothing is pushed. Exit 0 when all is
    well, 1 naming each problem, 2 for a configuration error (an unreadable patch set too).
    Under CI the table also goes to $GITHUB_STEP_SUMMARY or $ATOMGIT_STEP_SUMMARY.
    """
    project = app.project()
    names = [ps.name for ps in select_patch_sets(project, list(apis))] if apis else None
    findings = run_check(Session(project), names, offline=offline, envs=envs)
    broken = sorted(project.broken.items()) if names is None else []
    findings += [Finding(f"patches/{name}", "schema", False, message) for name, message in broken]
    ok = all(f.ok for f in findings)
    title = "backport check" + (" --offline" if offline else "") + (" --envs" if envs else "")
    _write_step_summary(title, findings)
    if as_json:
        print_json({"ok": ok, "offline": offline, "envs": envs,
                    "findings": [asdict(f) for f in findings],
                    "problems": [f.problem for f in findings if not f.ok],
                    "warnings": [f.problem for f in findings if f.warning]})
    else:
        table = Table("subject", "check", "result", "detail", title=title, title_justify="left")
        for f in findings:
            mark = ("[yellow]warn[/yellow]" if f.warning else "[green]ok[/green]") if f.ok else "[red]FAIL[/red]"
            detail = f.detail + (" (variant)" if f.variant else "")
            table.add_row(f.subject, f.check, mark, detail)
        app.console.print(table)
        if offline:
            echo("Offline, so not tried: whether the target branches exist upstream and whether "
                 "each patch set applies on them (`backport check` without --offline tries both).")
        for f in findings:  # a warning stays a row of the table; a problem is repeated on stderr
            if not f.ok:
                echo(f"problem: {f.problem}", err=True)
    raise SystemExit(EXIT_USAGE if broken else EXIT_OK if ok else EXIT_BRANCH_FAILED)


def _write_step_summary(title: str, findings: list[Finding]) -> None:
    """Append the table to each step summary file the CI names (one unwritable: a warning)."""
    text = redact(summary_markdown(title, findings))
    for variable in ("GITHUB_STEP_SUMMARY", "ATOMGIT_STEP_SUMMARY"):  # GitHub's, GitCode's
        target = os.environ.get(variable)
        if not target:
            continue
        try:
            with Path(target).open("a", encoding="utf-8") as out:
                out.write(text)
        except OSError as exc:
            echo(f"warning: the step summary {target} (${variable}) cannot be written: "
                 f"{exc.strerror}", err=True)
