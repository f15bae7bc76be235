"""`backport audit`: every change merged on a mapped branch since a date, and its state on
every other one (`audit/run.py`; the rules: `audit/rules.py`)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import click

from backport.audit.history import Store
from backport.audit.model import MISSING, Audit
from backport.audit.page import Links, from_pr_arguments, render_html, summary_lines
from backport.audit.run import branch_heads, run_audit
from backport.commands.common import AppContext, echo, pass_app, print_json
from backport.config.model import Project
from backport.config.validate import suggest
from backport.errors import EXIT_OK, BackportError, ErrorCode
from backport.pipeline.session import Session
from backport.report.progress import PhaseProgress

DEFAULT_DAYS = 90


def parse_since(text: str | None, today: date) -> date:
    """The start date: ``YYYY-MM-DD``, not after ``today``; default ``DEFAULT_DAYS`` ago."""
    example = (today - timedelta(days=DEFAULT_DAYS)).isoformat()
    if text is None:
        return today - timedelta(days=DEFAULT_DAYS)
    try:
        when = date.fromisoformat(text.strip())
    except ValueError:
        raise BackportError("usage", f"--since {text!r} is not a date; give it as YYYY-MM-DD, "
                                     f"e.g. --since {example}") from None
    if when > today:
        raise BackportError("usage", f"--since {when.isoformat()} lies in the future (today is "
                                     f"{today.isoformat()}); give a past date, e.g. --since "
                                     f"{example}")
    return when


def chosen_branches(mapped: list[str], asked: tuple[str, ...], config: str,
                    option: str = "--branch") -> list[str]:
    """The branches to audit: those asked (each mapped), else every mapped one, in map order."""
    for name in asked:
        if name not in mapped:
            raise BackportError("usage", f"{option} {name} is not a branch of {config} "
                                         f"({', '.join(mapped)}){suggest(name, mapped)}")
    return [name for name in mapped if name in asked] if asked else mapped


def unknown_warning(audit: Audit) -> str:
    """One sentence on the missing cells whose `applies` is unknown (a blob unread), or ""."""
    unknown = [(change, target, cell.why) for change in audit.changes
               for target, cell in change.on.items()
               if cell.state == MISSING and cell.applies is None]
    if not unknown:
        return ""
    change, target, why = unknown[0]
    return (f"whether {len(unknown)} missing change(s) apply is not known (`applies: null`): a "
            f"blob they need could not be read; e.g. {change.commit[:9]} on {target}: {why}")


def _run(project: Project, chosen: list[str], since: date, offline: bool) -> Audit:
    """The audit of ``chosen`` since ``since``, its progress on a terminal's stderr."""
    bm = project.branch_map
    session = Session(project)
    repo = session.cache
    start = int(datetime(since.year, since.month, since.day, tzinfo=UTC).timestamp())
    store = Store(repo.root / "audit" / f"{repo.path.name}.json")
    with PhaseProgress() as progress:
        progress.phase("reading the branches from the cache" if offline
                       else "fetching the branches")
        heads, why = branch_heads(repo, chosen, offline=offline)
        if offline and not any(heads.values()):
            raise BackportError(ErrorCode.USAGE, f"--offline: the cache holds none of "
                                f"{', '.join(chosen)}; run `backport audit` once without "
                                f"--offline to fetch them")
        unread, open_prs = "offline", None
        if not offline:
            forge = session.forge.real()
            lacking = forge.missing()
            unread = "; ".join(lacking)
            open_prs = None if lacking else (lambda: forge.list_prs("open"))
        return run_audit(repo, heads, since=start, since_text=since.isoformat(),
                         upstream=bm.upstream, ignore=bm.audit_ignore, store=store,
                         open_prs=open_prs, missing_why=why, prs_unread=unread,
                         progress=progress)


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
    today = datetime.now(UTC).date()
    since = parse_since(since_text, today)
    project = app.project()
    bm = project.branch_map
    mapped = list(bm.targets)
    chosen = chosen_branches(mapped, branches, bm.path.name)
    if fmt and not missing_on:
        raise BackportError("usage", "--format from-pr needs --missing-on B (the branch the "
                                     "changes are missing on)")
    if missing_on is not None:
        chosen_branches(chosen, (missing_on,), bm.path.name, "--missing-on")
    audit = _run(project, chosen, since, offline)
    warning = unknown_warning(audit)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    if html_file is not None:
        html_file.write_text(render_html(audit, Links(bm.web_url, bm.upstream)),
                             encoding="utf-8")
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
