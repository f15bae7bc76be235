"""Reports of a run from its records: the console table, ``report.md``, the ``--json`` document
(`status --json` with the message redacted, ``status`` as reports show it, ``test_state`` and
``skipped_because``; the keys in docs/apply.md), and the one summary comment on a set's source PR
(found again by `MARKER`; one line a target, starting ``| `<target>` |``, so a runner that knows
nothing of a target keeps that target's line as another runner wrote it)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from rich.console import Console
from rich.table import Table
from rich.text import Text

from backport.codec import encode
from backport.config.model import BranchMap, PatchSet, newest_first
from backport.records import (
    SKIP_CAUSE_TEXT,
    SKIP_DRY_NO_ENVS,
    SKIP_NO_TESTS,
    SKIP_NO_TORCH,
    SKIP_ON_REQUEST,
    BranchRecord,
)
from backport.redact import redact
from backport.report import wording
from backport.report.untrusted import untrusted
from backport.report.wording import exit_stated, summary_lines
from backport.states import FAILURES, Status


def test_result(record: BranchRecord) -> str:
    """One-line English test result: ``Ran 7 tests in 0.054s, OK, exit 0`` or why none ran."""
    test = record.test
    if test and test.skipped:
        return f"not run ({SKIP_CAUSE_TEXT[test.skip_cause]})"
    if not test:
        return f"not run ({record.status.value})"
    lines = summary_lines(test)
    parts = lines or ["no test summary"]
    if test.timed_out:
        parts.append("timed out")
    code = test.exit_code
    if code is None:
        parts.append("no exit code")
    elif not exit_stated(lines, code):
        parts.append(f"exit {code}")
    if test.changes.overlay:
        parts.append(f"torch_npu overlay: {' '.join(test.changes.overlay)}")
    if test.not_in_build:
        parts.append(f"not in build (not validated): {' '.join(test.changes.not_in_build)}")
    return redact(", ".join(wording.one_line(p) for p in parts))


# Why a branch's tests did not run on purpose, as `status --json` / `apply --json` say it.
SKIPPED_BECAUSE = {SKIP_ON_REQUEST: "--skip-tests", SKIP_NO_TESTS: "no-tests",
                   SKIP_NO_TORCH: "no-environment", SKIP_DRY_NO_ENVS: "dry-run"}
SKIPPED = "skipped"  # the shown status of a branch past its test step with no test run


def shown_status(record: BranchRecord) -> str:
    """The status a report shows: the journal's, but ``skipped`` for a branch whose tests were
    skipped (the journal keeps ``tested``, the step it passed)."""
    if record.status == Status.TESTED and record.test is not None and record.test.skipped:
        return SKIPPED
    return record.status.value


def test_state(record: BranchRecord) -> tuple[str, str | None]:
    """``passed``, ``failed``, ``skipped`` (with its cause from SKIPPED_BECAUSE) or ``not-run``
    (none yet, or none could run: the status says why)."""
    test = record.test
    if test is None or (test.ok is None and not test.skipped):
        return "not-run", None
    if test.skipped:
        return SKIPPED, SKIPPED_BECAUSE.get(test.skip_cause, test.skip_cause)
    return ("passed" if test.ok else "failed"), None


def report_rows(records: list[BranchRecord]) -> list[dict]:
    """Flat rows for tables: target, fork branch, status, commit, test, PR, messages."""
    rows = []
    for record in records:
        test = record.test
        rows.append({
            "target": record.target,
            "fork_branch": record.fork_branch,
            "status": shown_status(record),
            "commit": (record.commit or "")[:12],
            "test": test_result(record),
            "pr": record.pr.url if record.pr else "",
            "pr_number": record.pr.number if record.pr else None,
            "log": "" if test is None or test.skipped else (test.log or ""),
            "message": redact(" ".join(record.message.split())),
            "warnings": [redact(" ".join(w.split())) for w in record.warnings],
            "source": f" (from {record.series_source.label})" if record.series_source else "",
        })
    return rows


def apply_notes(record: BranchRecord) -> list[str]:
    """What a reviewer should know about how the series went in (English, one line each)."""
    notes = []
    if record.present:
        tests = "; ".join(t.describe() for t in record.present)
        notes.append(f"already defines what the patch adds: {tests}"
                     if record.status == Status.ALREADY_PRESENT else
                     f"already defines a test the patch adds: {tests}")
    if record.series_source:
        notes.append(f"its own series conflicts; applied from {record.series_source.label}")
    tried = record.tried_sources
    if tried and record.status == Status.CONFLICT:
        notes.append(f"{', '.join(tried)} still conflict{'s' if len(tried) == 1 else ''}")
    if merged := record.merged_files:
        notes.append(f"{', '.join(merged)} differ{'s' if len(merged) == 1 else ''} from the "
                     "source around the patch's hunks and went in only through a 3-way merge: "
                     "compare the change with the newer branches")
    if loose := record.loose_files:
        notes.append(f"{', '.join(loose)} went in with the series' context lines ignored (each "
                     "change found exactly once in the file): compare the change with the newer "
                     "branches")
    if record.test is not None and record.test.not_in_build:
        files = record.test.changes.not_in_build
        notes.append(f"{', '.join(files)} {'is' if len(files) == 1 else 'are'} not in the build "
                     "the tests ran on: the result does not validate the change (its PR is a "
                     "draft); test it on a build that holds it")
    return notes


def status_style(status: str) -> str:
    """Rich style for a status: green for success, red for failures, yellow otherwise."""
    if status == SKIPPED:
        return "yellow"
    value = Status(status)
    if value.ok:
        return "green"
    return "red" if value in FAILURES else "yellow"


def render_table(records: list[BranchRecord], console: Console) -> None:
    """Print one row per branch (target, fork branch, status, test result, PR), then messages."""
    rows = report_rows(records)
    table = Table()
    for header in ("target", "fork branch", "status", "test", "PR"):
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(row["target"], row["fork_branch"],
                      Text(row["status"] + row["source"], style=status_style(row["status"])),
                      row["test"], row["pr"] or "-")
    console.print(table)
    for row in rows:
        shown = status_style(row["status"]) != "green" or row["status"] == Status.ALREADY_PROPOSED
        if row["message"] and shown and row["status"] != Status.CONFLICT:
            console.print(Text(f"{row['target']}: {row['message']}", style=status_style(row["status"])))
        for warning in row["warnings"]:
            console.print(Text(f"{row['target']}: warning: {warning}", style="yellow"))
    for record in records:
        for note in apply_notes(record):
            console.print(Text(f"{record.target}: {note}", style="yellow"))
    conflicted = {row["target"]: row for row in rows if row["status"] == Status.CONFLICT}
    for target in newest_first(conflicted):  # resolve the newest first: it flows down
        row = conflicted[target]
        console.print(Text(f"{target}: {row['message']}", style=status_style(row["status"])))
    if len(conflicted) > 1:
        console.print(Text("Resolve the newest branch first: `backport continue` tries its "
                           "resolution on the older branches.", style="red"))


def _md_cell(text: str) -> str:
    return untrusted(text, where="cell") or "-"


def render_markdown(patch_set_name: str, records: list[BranchRecord]) -> str:
    """The run report written to ``.backport/runs/<name>/report.md``."""
    rows = report_rows(records)
    lines = [f"# backport report: {patch_set_name}", "",
             "| target | fork branch | status | commit | test | PR |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        pr = (f"[#{row['pr_number']}]({row['pr']})" if row["pr"] and row["pr_number"]
              else _md_cell(row["pr"]))
        commit = f"`{row['commit']}`" if row["commit"] else "-"
        cells = [_md_cell(c) for c in (row["target"], row["fork_branch"],
                                       row["status"] + row["source"])]
        cells += [commit, _md_cell(row["test"]), pr]
        lines.append("| " + " | ".join(cells) + " |")
    prose = partial(untrusted, where="prose")
    notes = [f"- {prose(row['target'])} ({row['status']}): {prose(row['message'])}"
             for row in rows if row["message"]]
    notes += [f"- {prose(row['target'])} (warning): {prose(w)}" for row in rows for w in row["warnings"]]
    notes += [f"- {prose(r.target)}: {prose(note)}" for r in records for note in apply_notes(r)]
    if notes:
        lines += ["", "## Messages", "", *notes]
    logs = [f"- {prose(row['target'])}: {untrusted(row['log'], where='span')}"
            for row in rows if row["log"]]
    if logs:
        lines += ["", "## Test logs", "", *logs]
    return "\n".join(lines) + "\n"


def status_json(patch_set: PatchSet, records: list[BranchRecord]) -> dict:
    """The ``status --json`` / ``apply --json`` document for one patch set."""
    branches = []
    for record in records:
        item = encode(record)
        item["message"] = redact(record.message)
        item["status"] = shown_status(record)
        item["test_state"], item["skipped_because"] = test_state(record)
        branches.append(item)
    return {"api": patch_set.api, "patch_set": patch_set.name, "branches": branches}


# -- the summary comment on a source PR ------------------------------------------------------
MARKER = "<!-- backport:source-summary -->"


def rows_of(body: str) -> dict[str, str]:
    """The table lines of a summary already posted, by target."""
    return {target: line for line in body.splitlines()
            if line.startswith("| `") and (target := line[3:].partition("`")[0])}


def _row(number: int, rec: BranchRecord) -> str:
    """One target's line: its state as the PR bodies word it, its PR (or the PR that carries
    the change there), its result."""
    from backport.report.body import proposed_zh, result_cell  # loaded to write a comment alone

    pr = (f"[!{rec.pr.number}]({rec.pr.url})" if rec.pr is not None else
          proposed_zh(rec) or "—")
    state = wording.status_zh(shown_status(rec))  # a branch whose tests were skipped did not pass them
    result = "—" if rec.status == Status.PENDING and rec.test is None else result_cell(rec)
    return (f"| `{rec.target}` | {state} | {pr} | {result} | "
            f"`backport apply --from-pr {number} --branch {rec.target}` |")


def render_summary(ps: PatchSet, bm: BranchMap, records: Sequence[BranchRecord],
                   existing: str | None = None) -> str:
    """The summary of ``ps`` (made from a PR) over its targets: each from ``records`` where
    one is known, else the line ``existing`` holds for it, else as not run yet."""
    source = ps.source
    assert source is not None
    by_target = {rec.target: rec for rec in records}
    kept = rows_of(existing or "")
    lines = []
    for target in ps.branches:
        rec = by_target.get(target)
        if rec is None or (rec.status == Status.PENDING and rec.pr is None and target in kept):
            rec = BranchRecord(target, ps.fork_branch(bm, target))
            lines.append(kept.get(target) or _row(source.number, rec))
        else:
            lines.append(_row(source.number, rec))
    base = untrusted(source.base, where="span")
    what = (f"本 PR 已合入 {base}（提交 `{source.commit[:12]}`）" if source.merged else
            f"本 PR 尚未合入 {base}，以其当前提交 `{source.commit[:12]}` 回合")
    return "\n".join([
        MARKER,
        f"### 回合到其他发布分支（{bm.upstream}!{source.number}）",
        "",
        f"{what}。它回合到以下发布分支的情况如下：每个分支一个 PR（来自 fork `{bm.fork}`），"
        "测试在配置给该分支的运行环境中运行（所用 torch / torch_npu 版本见其 PR 的验证证据）。",
        "",
        "| 目标分支 | 状态 | PR | 测试结果 | 重新运行该分支 |",
        "| --- | --- | --- | --- | --- |",
        *lines,
        "",
        "本评论由 backport 生成，每次运行后在原处更新；各分支的完整证据见其 PR 的正文。",
        "",
    ])
