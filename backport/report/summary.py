"""Run reports built from journal records: console table, Markdown file and ``--json`` output."""

from __future__ import annotations

import copy

from rich.console import Console
from rich.table import Table
from rich.text import Text

from backport.branch_order import newest_first
from backport.config.model import PatchSet
from backport.redact import redact
from backport.report.body import exit_stated, summary_lines
from backport.states import FAILURES, Status

_TEST_KEYS = ("ran", "ok", "exit_code", "summary")
_PR_KEYS = ("number", "url")


def test_result(record: dict) -> str:
    """One-line English test result: ``Ran 7 tests in 0.054s, OK, exit 0`` or why none ran."""
    test = record.get("test")
    status = str(record.get("status") or "pending")
    if test and test.get("skipped"):
        return "not run (--skip-tests)"
    if not test:
        return f"not run ({status})"
    lines = summary_lines(test)
    parts = lines or ["no test summary"]
    if test.get("timed_out"):
        parts.append("timed out")
    code = test.get("exit_code")
    if code is None:
        parts.append("no exit code")
    elif not exit_stated(lines, code):
        parts.append(f"exit {code}")
    return redact(", ".join(" ".join(p.split()) for p in parts))


def _pr_url(record: dict) -> str:
    pr = record.get("pr") or {}
    return str(pr.get("url") or "")


def _source_suffix(record: dict) -> str:
    source = record.get("series_source") or {}
    return f" (from the {source['branch']} {source.get('kind')})" if source.get("branch") else ""


def report_rows(api: str, records: list[dict]) -> list[dict]:
    """Flat rows (all strings) for tables: api, target, fork branch, status, commit, test, PR."""
    rows = []
    for record in records:
        pr = record.get("pr") or {}
        rows.append({
            "api": api,
            "target": str(record.get("target") or ""),
            "fork_branch": str(record.get("fork_branch") or ""),
            "status": str(record.get("status") or "pending"),
            "commit": str(record.get("commit") or "")[:12],
            "test": test_result(record),
            "pr": _pr_url(record),
            "pr_number": pr.get("number"),
            "log": "" if (record.get("test") or {}).get("skipped")
                   else str((record.get("test") or {}).get("log") or ""),
            "message": redact(" ".join(str(record.get("message") or "").split())),
            "warnings": [redact(" ".join(str(w).split())) for w in record.get("warnings") or []],
            "source": _source_suffix(record),
        })
    return rows


def apply_notes(record: dict) -> list[str]:
    """What a reviewer should know about how the series went in (English, one line each)."""
    notes = []
    source = record.get("series_source") or {}
    if source.get("branch"):
        notes.append(f"applied from the {source['branch']} {source.get('kind') or 'resolution'}, "
                     f"because its own series conflicts")
    tried = record.get("tried_sources") or []
    if tried and str(record.get("status")) == Status.CONFLICT:
        notes.append(f"{', '.join(tried)} still conflict{'s' if len(tried) == 1 else ''}")
    merged = record.get("merged_files") or []
    if merged:
        notes.append(f"{', '.join(merged)} differ{'s' if len(merged) == 1 else ''} from the "
                     "source around the patch's hunks and went in only through a 3-way merge: "
                     "compare the change with the newer branches")
    return notes


def status_style(status: str) -> str:
    """Rich style for a status: green for success, red for failures, yellow otherwise."""
    try:
        value = Status(status)
    except ValueError:
        return ""
    if value.ok:
        return "green"
    return "red" if value in FAILURES else "yellow"


def render_table(records: list[dict], console: Console, *, title: str | None = None) -> None:
    """Print one row per branch (target, fork branch, status, test result, PR), then messages."""
    rows = report_rows("", records)
    table = Table(title=title, show_lines=False)
    for header in ("target", "fork branch", "status", "test", "PR"):
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(row["target"], row["fork_branch"],
                      Text(row["status"] + row["source"], style=status_style(row["status"])),
                      row["test"], row["pr"] or "-")
    console.print(table)
    for row in rows:
        if row["message"] and status_style(row["status"]) != "green" and row["status"] != Status.CONFLICT:
            console.print(Text(f"{row['target']}: {row['message']}", style=status_style(row["status"])))
        for warning in row["warnings"]:
            console.print(Text(f"{row['target']}: warning: {warning}", style="yellow"))
    for record in records:
        for note in apply_notes(record):
            console.print(Text(f"{record.get('target')}: {note}", style="yellow"))
    conflicted = {row["target"]: row for row in rows if row["status"] == Status.CONFLICT}
    for target in newest_first(conflicted):  # resolve the newest first: it flows down
        row = conflicted[target]
        console.print(Text(f"{target}: {row['message']}", style=status_style(row["status"])))
    if len(conflicted) > 1:
        console.print(Text("Resolve the newest branch first: `backport continue` tries its "
                           "resolution on the older branches.", style="red"))


def _md_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|") or "-"


def render_markdown(patch_set_name: str, records: list[dict]) -> str:
    """The run report written to ``.backport/runs/<name>/report.md``."""
    rows = report_rows(patch_set_name, records)
    lines = [f"# backport report: {patch_set_name}", "",
             "| target | fork branch | status | commit | test | PR |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        pr = f"[#{row['pr_number']}]({row['pr']})" if row["pr"] and row["pr_number"] else row["pr"]
        commit = f"`{row['commit']}`" if row["commit"] else ""
        cells = (row["target"], row["fork_branch"], row["status"] + row["source"], commit, row["test"], pr)
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    notes = [f"- {row['target']} ({row['status']}): {row['message']}" for row in rows if row["message"]]
    notes += [f"- {row['target']} (warning): {w}" for row in rows for w in row["warnings"]]
    notes += [f"- {r.get('target')}: {note}" for r in records for note in apply_notes(r)]
    if notes:
        lines += ["", "## Messages", "", *notes]
    logs = [f"- {row['target']}: `{row['log']}`" for row in rows if row["log"]]
    if logs:
        lines += ["", "## Test logs", "", *logs]
    return "\n".join(lines) + "\n"


def _subset(value: object, keys: tuple[str, ...]) -> dict | None:
    if not isinstance(value, dict) or not value:
        return None
    out = copy.deepcopy(value)
    for key in keys:
        out.setdefault(key, None)
    return out


def status_json(patch_set: PatchSet, records: list[dict]) -> dict:
    """The ``status --json`` / ``apply --json`` document for one patch set."""
    branches = []
    for record in records:
        item = copy.deepcopy(record)
        item.update(
            target=record.get("target"),
            fork_branch=record.get("fork_branch"),
            status=str(record.get("status") or "pending"),
            commit=record.get("commit"),
            test=_subset(record.get("test"), _TEST_KEYS),
            env=copy.deepcopy(record.get("env")) or None,
            pr=_subset(record.get("pr"), _PR_KEYS),
            message=redact(str(record.get("message") or "")),
            series_source=copy.deepcopy(record.get("series_source")) or None,
        )
        branches.append(item)
    return {"api": patch_set.api, "patch_set": patch_set.name, "branches": branches}
