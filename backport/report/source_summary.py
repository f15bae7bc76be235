"""The one summary comment on a backport's source PR: per target, its state, its PR, its test
result and the command that runs that branch again.

Each state reads as the PR bodies word it (`prose_zh.status_zh`). Found again by
:data:`MARKER` (a hidden HTML comment); its table has one line per target, starting
``| `<target>` |``, so a runner that knows nothing of a target keeps that target's line as
another runner wrote it (:func:`rows_of`).
"""

from __future__ import annotations

from collections.abc import Sequence

from backport.config.model import BranchMap, PatchSet
from backport.records import BranchRecord
from backport.report.body import proposed_zh, result_cell
from backport.report.inert import inert
from backport.report.prose_zh import status_zh
from backport.report.summary import shown_status
from backport.states import Status

MARKER = "<!-- backport:source-summary -->"
HEADER = "| 目标分支 | 状态 | PR | 测试结果 | 重新运行该分支 |"

def rerun_command(number: int, target: str) -> str:
    return f"backport apply --from-pr {number} --branch {target}"


def rows_of(body: str) -> dict[str, str]:
    """The table lines of a summary already posted, by target."""
    rows: dict[str, str] = {}
    for line in body.splitlines():
        if line.startswith("| `"):
            target = line[3:].partition("`")[0]
            if target:
                rows[target] = line
    return rows


def _row(number: int, rec: BranchRecord) -> str:
    """One target's line; its state in the one wording of states (`prose_zh.status_zh`); an
    already-proposed branch names the PR that carries the change there."""
    pr = (f"[!{rec.pr.number}]({rec.pr.url})" if rec.pr is not None else
          proposed_zh(rec) or "—")
    state = status_zh(shown_status(rec))  # a branch whose tests were skipped did not pass them
    result = "—" if rec.status == Status.PENDING and rec.test is None else result_cell(rec)
    return (f"| `{rec.target}` | {state} | {pr} | {result} | "
            f"`{rerun_command(number, rec.target)}` |")


def render_summary(ps: PatchSet, bm: BranchMap, records: Sequence[BranchRecord],
                   existing: str | None = None) -> str:
    """The summary of ``ps`` (made from a PR) over its targets: each from ``records`` where
    one is known, else the line ``existing`` holds for it, else as not run yet."""
    assert ps.source is not None
    source = ps.source
    by_target = {rec.target: rec for rec in records}
    kept = rows_of(existing or "")
    lines = []
    for target in ps.branches:
        rec = by_target.get(target)
        if rec is None or (rec.status == Status.PENDING and rec.pr is None and target in kept):
            line = kept.get(target)
            if line is None:
                line = _row(source.number, BranchRecord(target, ps.fork_branch(bm, target)))
            lines.append(line)
        else:
            lines.append(_row(source.number, rec))
    base = inert(source.base, where="span")
    what = (f"本 PR 已合入 {base}（提交 `{source.commit[:12]}`）" if source.merged else
            f"本 PR 尚未合入 {base}，以其当前提交 `{source.commit[:12]}` 回合")
    return "\n".join([
        MARKER,
        f"### 回合到其他发布分支（{bm.upstream}!{source.number}）",
        "",
        f"{what}。它回合到以下发布分支的情况如下：每个分支一个 PR（来自 fork `{bm.fork}`），"
        "测试在配置给该分支的运行环境中运行（所用 torch / torch_npu 版本见其 PR 的验证证据）。",
        "",
        HEADER,
        "| --- | --- | --- | --- | --- |",
        *lines,
        "",
        "本评论由 backport 生成，每次运行后在原处更新；各分支的完整证据见其 PR 的正文。",
        "",
    ])
