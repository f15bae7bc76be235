"""`backport audit`: every change merged on a mapped branch since a date, and its state on
every other one (the run: `audit/run.py` `audit_project`; the rules: `audit/rules.py`)."""

from __future__ import annotations

from pathlib import Path

import click

from backport.audit.page import from_pr_arguments, render_html, summary_lines
from backport.audit.run import DEFAULT_DAYS, audit_project, unknown_warning
from backport.commands.common import AppContext, echo, pass_app, print_json
from backport.errors import EXIT_OK, BackportError


@click.command("audit")
@click.option("--since", "since_text", metavar="DATE",
              help=f"First day of changes, YYYY-MM-DD (default: {DEFAULT_DAYS} days ago).")
@click.option("--branch", "branches", multiple=True, metavar="B",
              help="Only these mapped branches (rows and columns); default: every one.")
@click.option("--json", "as_json", is_flag=True, help="The audit as JSON (docs/audit.md).")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the audit as one self-contained HTML page to FILE.")
@click.option("--offline", is_flag=True,
              help="No network: the branches as last fetched into the cache, no open PR read.")
@click.option("--missing-on", "missing_on", metavar="B",
              help="With --format from-pr: each fix missing on B that applies cleanly, once.")
@click.option("--format", "fmt", type=click.Choice(["from-pr"]),
              help="from-pr: print `--from-pr N` for each (needs --missing-on).")
@pass_app
def audit_cmd(app: AppContext, since_text: str | None, branches: tuple[str, ...], as_json: bool,
              html_file: Path | None, offline: bool, missing_on: str | None,
              fmt: str | None) -> None:
    """Which changes of each mapped branch are on the others: landed, proposed, missing.

    For every change merged on a branch of branches.yaml since DATE (first-parent; a squash
    merge is one change, !N), its state on each other branch: landed (the same commit or
    patch-id, a commit carrying it, the same or a similar title with a file in common, its
    tests or content already there), proposed (an open PR carries it), missing (applies,
    conflicts, or unknown where a blob cannot be read), not-needed (only files the branch
    lacks) or ignored (`audit: {ignore: [...]}`). One fix on several branches is one row.
    Reads the upstream into the cache; writes nothing remote (docs/audit.md). Exit 0; 2 for a
    bad argument or configuration, or --offline with nothing in the cache.
    """
    if fmt and not missing_on:
        raise BackportError("usage", "--format from-pr needs --missing-on B (the branch the "
                                     "changes are missing on)")
    project = app.project()
    bm = project.branch_map
    audit = audit_project(project, since_text, branches, offline=offline, missing_on=missing_on)
    warning = unknown_warning(audit)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    if html_file is not None:
        html_file.write_text(render_html(audit, bm.web_url, bm.upstream), encoding="utf-8")
    if missing_on is not None and fmt == "from-pr":
        for line in from_pr_arguments(audit, missing_on):
            click.echo(line)
    elif as_json:
        print_json(audit.to_json())
    else:
        for line in summary_lines(audit):
            echo(line)
        if html_file is not None:
            echo(f"page: {html_file}")
    raise SystemExit(EXIT_OK)
