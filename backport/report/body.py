"""The PR body (`render_body`), in the Ascend/pytorch PR template's six sections, rendered with
Jinja2 (templates/pr_body.md.j2, or a project's own template) from the records: the journal's, or
a sibling's as its PR's record line states it (a branch without one renders an empty record named
as configured); the docs audit comes in as `DocsFacts`. A body is written from the records' facts,
never from a record's ``message`` (written for the maintainer's terminal); a ``test.commit`` other
than the PR's head makes the evidence say the result is stale. Generated parts are regions
(`regions.py`): a refresh replaces only those and keeps the maintainer's text byte for byte;
``body.md`` and the CheckList are written once, at creation. Jinja2 is imported only where a
body is rendered, sandboxed, with the `untrusted` filter (`inert`, its old name, too).
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from backport.config.model import BranchMap, PatchSet
from backport.envs.model import AUTOLOAD
from backport.errors import BackportError
from backport.records import BranchRecord, EnvEvidence
from backport.redact import redact
from backport.report import regions as rg
from backport.report import wording
from backport.report.untrusted import untrusted
from backport.report.wording import exit_stated, one_line, summary_lines
from backport.states import Status

if TYPE_CHECKING:  # Jinja2 is imported only where a body is rendered
    from jinja2.sandbox import SandboxedEnvironment

NOT_FOUND_ZH = "未找到"


class DocsFacts(Protocol):
    """What one docs version says about the API (a `docs_audit.DocsEntry`)."""

    version: str
    path: str
    listed: bool
    summary: str


@dataclass
class BodyContext:
    """Everything one PR body is rendered from: config, every branch's record, the PR's target."""

    branch_map: BranchMap
    patch_set: PatchSet
    branches: list[BranchRecord]  # journal records, one per target branch
    target: str  # the target branch of this PR (its evidence block)
    docs: Sequence[DocsFacts] | None = None  # the docs audit, one entry per docs version
    template: Path | None = None  # a project template replacing the packaged one
    # The JSON of ``target``'s record line where its record was read from it (`record_line`)
    kept: dict | None = None


def proposed_zh(view: BranchRecord) -> str | None:
    """``[!7](url)（同步机器人的 PR，尚未合入）`` for an already-proposed branch, else None."""
    pr = view.proposed
    if pr is None or view.status != Status.ALREADY_PROPOSED:
        return None
    kind = wording.PROPOSED_KIND_ZH.get(pr.kind, "其他 PR")
    state = wording.PROPOSED_STATE_ZH.get(pr.state, wording.code(pr.state))
    return f"[!{pr.number}]({pr.url})（{kind}，{state}）"


_cell = partial(untrusted, where="cell")  # a value from outside (a name, a test's output)
_prose = partial(untrusted, where="prose")


def _value(value: object) -> str:
    """A probed or documented fact (from outside) in prose or a cell."""
    return NOT_FOUND_ZH if value is None or value == "" else _cell(value)


def result_cell(view: BranchRecord) -> str:
    """The seed's result wording: ``Ran 7 tests in 0.054s，OK，退出码 0`` or why none ran."""
    if view.status == "conflict":
        files = "、".join(_cell(f) for f in view.conflicts) or "文件未知"
        return one_line(f"冲突：{files}（补丁未能自动应用，未运行测试）")
    if view.skipped and view.test is not None:
        return wording.SKIPPED_ZH[view.test.skip_cause]
    proposed = proposed_zh(view)
    if proposed is not None:
        return one_line(f"未运行：该分支已有 {proposed}带入同一源 PR，未再创建 PR")
    if not view.test:
        reason = wording.status_zh(view.status)
        if view.status == "env-mismatch" and view.mismatches:
            reason += "：" + "；".join(wording.mismatch_zh(m) for m in view.mismatches)
        return one_line(f"未运行：{reason}")
    lines = summary_lines(view.test)
    parts = [_cell(line) for line in lines] or ["无测试摘要"]
    if view.test.timed_out:
        duration = view.test.duration
        parts.append(f"超时（运行 {duration:.0f} 秒后终止）" if isinstance(duration, int | float)
                     else "超时")
    code = view.test.exit_code
    if code is not None and not exit_stated(lines, code):
        parts.append(f"退出码 {code}")
    elif code is None and not view.test.timed_out:
        parts.append("无退出码")
    missed = [f"{wording.code(name)}（{wording.OUTCOME_ZH.get(outcome, wording.code(outcome))}）"
              for name, outcome in view.test.patch_tests if outcome != "ok"]
    if missed and all(run.ok for run in view.test.runs):  # the summary alone would say passed
        parts.append(f"补丁新增的测试未全部通过：{'、'.join(missed)}")
    changes = view.test.changes
    if changes.overlay:
        parts.append(f"torch_npu 中的 {_files_zh(changes.overlay)} 以该分支的版本运行")
    if changes.not_in_build:
        parts.append(f"未验证改动（证据中的 `NOT_IN_BUILD`）：{_files_zh(changes.not_in_build)} "
                     f"不在所测的 torch_npu 构建中")
    if view.stale:
        tested, head = str(view.test.commit)[:12], str(view.head)[:12]
        parts.append(f"该结果测于 {tested}；Fork 分支已被他人更新为 {head}，未经本工具测试"
                     if view.fork_sha else f"该结果测于 {tested}，不是 Fork 分支当前的 {head}")
    return one_line("，".join(parts))


def _files_zh(paths: Sequence[str]) -> str:
    """Paths as code spans (they stay spans in a table cell and in a sentence)."""
    return "、".join(wording.code(path) for path in paths)


def changes_notes_zh(views: Sequence[BranchRecord]) -> list[str]:
    """Under the result table: how far the tests saw what the series changes beyond tests,
    one sentence per kind, the branches that share it named together."""
    by_kind: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for view in views:
        if view.test is None or view.test.skipped:
            continue
        changes = view.test.changes
        for kind, paths in (("overlay", changes.overlay), ("build", changes.not_in_build),
                            ("other", changes.not_exercised)):
            if paths:
                by_kind.setdefault((kind, paths), []).append(view.target)
    return [_CHANGES_NOTE_ZH[kind].format(where="、".join(_prose(t) for t in targets),
                                          files=_files_zh(paths))
            for (kind, paths), targets in by_kind.items()]


_CHANGES_NOTE_ZH = {
    "overlay": "{where}：补丁修改了 torch_npu 的 Python 文件 {files}。测试使用运行环境中已安装的"
               " torch_npu，其中这些文件替换为该分支打上补丁后的版本，其余文件与已安装版本相同。",
    "build": "{where}：补丁修改的 {files} 不在所测的构建中：测试使用运行环境中已安装的"
             " torch_npu，其中不包含这些改动；上表结果不能证明该改动有效，需在包含该改动的构建上验证。",
    "other": "{where}：补丁修改的 {files} 既不是测试也不是 torch_npu 代码，本次测试未涉及。",
}


def issue_sentence(vs: _Views, issue: str) -> str:
    """Which PRs are linked to ``issue`` (how the sentence names the set's issues) as true when
    rendered: linked, not linked (the forge refused), carried by another PR, no PR yet."""

    def linked(v: BranchRecord) -> bool:
        if v.pr is not None and "link" in v.pr.refused:
            return False
        # The body being rendered is the own branch's PR, linked right after it is written.
        return v.linked or (v.target == vs.own.target and bool(v.commit or v.pushed_sha))

    groups: dict[str, list[str]] = {f"已关联{issue} 的 PR": [], f"PR 未关联{issue} 的目标分支": [],
                                    "已由其他 PR 带入源 PR 的目标分支": [], "尚无 PR 的目标分支": []}
    with_link, unlinked, elsewhere, missing = groups.values()
    for v in vs.views:
        if linked(v):
            with_link.append(v.target)
        elif v.status == Status.ALREADY_PROPOSED and v.proposed is not None:
            elsewhere.append(f"{v.target}（!{v.proposed.number}）")
        else:
            (unlinked if v.pr is not None else missing).append(v.target)
    if len(with_link) == len(vs.views):
        return f"{_cn_count(len(vs.views))}个目标分支的 PR 均关联{issue}。"
    return "；".join(f"{title}：{'、'.join(names)}" for title, names in groups.items() if names) + "。"


def _visible(env: EnvEvidence) -> str:
    count = env.fact("npu_count")
    if count is None:
        return NOT_FOUND_ZH
    devices = env.fact("visible_devices")
    if count and devices:
        return f"{_cell(count)}（物理 NPU {_cell(devices)}）"
    return f"{count}（未检测到可见 NPU）" if count == 0 else _cell(count)


def _cn_count(n: int) -> str:
    return "零一两三四五六七八九十"[n] if 0 <= n <= 10 else str(n)


class _Views:
    """The branch views of one context, in the patch set's target order."""

    def __init__(self, ctx: BodyContext) -> None:
        by_target = {r.target: r for r in ctx.branches}
        targets = list(ctx.patch_set.branches) or [str(t) for t in by_target if t]
        self.ctx = ctx
        self.views = [self.view(t, by_target.get(t)) for t in targets]
        self.own = self.view(ctx.target, by_target.get(ctx.target))

    def view(self, target: str, record: BranchRecord | None) -> BranchRecord:
        """The record of ``target``; an empty one when it has none, named as configured."""
        fork_branch = self.ctx.patch_set.fork_branch(self.ctx.branch_map, target)
        record = record or BranchRecord(target, fork_branch)
        if record.target and record.fork_branch:
            return record
        return record.named(target, fork_branch)

    def first_user(self, view: BranchRecord) -> BranchRecord | None:
        """The earlier branch whose environment ``view`` reuses, if any."""
        for other in self.views:
            if other.target == view.target:
                return None
            if other.env and other.env_name == view.env_name:
                return other
        return None


def _common_or_per_branch(views: list[BranchRecord], fmt: Callable[[EnvEvidence], str]) -> str:
    """One value when every probed branch agrees, else ``v2.7.1 X；v2.11.0 Y``."""
    probed = [(v.target, fmt(v.env)) for v in views if v.env]
    values = {value for _, value in probed}
    if not probed:
        return "未探测"
    if len(values) == 1:
        return values.pop()
    return "；".join(f"{target} {value}" for target, value in probed)


def _value_of(key: str, env: EnvEvidence) -> str:
    return _value(env.fact(key))


def _env_lines(vs: _Views) -> list[str]:
    views = vs.views
    lines = [
        f"{label}：{_common_or_per_branch(views, partial(_value_of, key))}"
        for label, key in (("主机平台", "platform"), ("Python", "python"), ("CANN", "cann"),
                           ("NPU", "npu_model"))
    ]
    lines.append(f"可见设备数：{_common_or_per_branch(views, _visible)}")
    for view in views:
        env = view.env
        if not env:
            why = (wording.SKIPPED_ZH[view.test.skip_cause].removeprefix("未运行：")
                   if view.skipped and view.test is not None else
                   f"该分支未运行测试：{wording.status_zh(view.status)}")
            lines.append(f"{view.target}：未探测运行环境（{why}）")
            continue
        first = vs.first_user(view)
        if first is not None:
            lines.append(f"{view.target}：复用 {_prose(view.env_name)} 环境（与 {first.target} 相同）")
            continue
        line = (f"{view.target}（{_value(env.name)}）：torch {_value(env.fact('torch'))}，"
                f"torch-npu {_value(env.fact('torch_npu'))}")
        if env.fact("torch_npu_loads") is False or env.autoload_disabled:
            line += f"；torch_npu 未加载，测试在 {wording.code(f'{AUTOLOAD}=0')} 下运行，未使用 NPU"
        lines.append(line)
    notes = [(v.target, v.env.note) for v in views if v.env and v.env.note]
    if len({note for _, note in notes}) == 1:
        lines.append(f"设备说明：{wording.device_note_zh(notes[0][1])}")
    else:
        lines.extend(f"设备说明（{target}）：{wording.device_note_zh(note)}" for target, note in notes)
    return [one_line(line) for line in lines]


def _commands(views: list[BranchRecord]) -> list[str]:
    lines: list[str] = []
    for view in views:
        env = f"（{view.env_name}）" if view.env_name else ""
        lines.append(f"# {view.target}{env}")
        if view.skipped and view.test is not None:
            lines.append(f"# {wording.SKIPPED_ZH[view.test.skip_cause]}".replace("`", ""))
        elif view.test and view.test.command:
            lines.append(view.test.command)
        else:
            lines.append(f"# 未运行：{wording.status_zh(view.status)}".replace("`", ""))
    return [untrusted(line, where="code") for line in lines]


def _shows_run(view: BranchRecord) -> bool:
    """Whether the branch's row shows a test run (not skipped, no conflict, not proposed
    elsewhere): only then do the sentences under the table speak of its run."""
    return (view.test is not None and not view.skipped and view.status != "conflict"
            and proposed_zh(view) is None)


def _shared_notes(vs: _Views) -> list[str]:
    return [f"{view.target} 与 {first.target} 共用 {_prose(view.env_name)} 环境：{view.target} 的测试源码"
            f"取自 {view.target} 分支，在该环境中做兼容性预验证；目标分支结论以 PR CI 结果为准。"
            for view in vs.views if _shows_run(view) and (first := vs.first_user(view)) is not None]


def _runner_note(vs: _Views) -> str | None:
    """How the tests were run, so differing times explain themselves; None when no branch whose
    row shows a test run ran in a warm worker."""
    ran = [v for v in vs.views if _shows_run(v) and v.test and v.test.runner]
    warm = [v.target for v in ran if v.test and v.test.runner == "warm"]
    isolated = [v.target for v in ran if v.target not in warm]
    if not warm:
        return None
    code, key = wording.code, wording.RUNNER.key
    text = (f"{'、'.join(warm)} 的测试在一个已导入 torch 的常驻 Python 进程中运行"
            f"（证据中的 {code(f'{key}=warm')}），torch 的导入不计入所报耗时，"
            "因此耗时可能明显短于在新进程中运行")
    if isolated:
        text += f"；{'、'.join(isolated)} 的测试在新启动的进程中运行（{code(f'{key}=isolated')}）"
    return (text + f"。在目标分支的源码目录下执行证据中的 {code('COMMAND')}（即上方“执行命令”），"
            "即可在新进程中复现该结果。")


def source_pr(ctx: BodyContext) -> dict[str, str] | None:
    """The PR the set was made from, as the 合入来源 region shows it (None: made by hand)."""
    source, bm = ctx.patch_set.source, ctx.branch_map
    if source is None:
        return None
    base = wording.code(source.base)
    state = (f"已合入 {base}，合入提交 `{source.commit[:12]}`" if source.merged else
             f"尚未合入 {base}：本 PR 取自其当前提交（至 `{source.commit[:12]}`），"
             f"源 PR 合入前可能仍会变化")
    return {"ref": f"{bm.upstream}!{source.number}",
            "url": bm.pr_url(source.number), "state": state}


def evidence_text(view: BranchRecord, ctx: BodyContext) -> str:
    """The evidence of ``view`` as KEY=VALUE lines (no fence, no markers)."""
    configured = ctx.branch_map.targets.get(view.target)
    facts = wording.Facts(record=view, upstream=ctx.branch_map.upstream, api=ctx.patch_set.api,
                     configured_env=configured.env if configured else None,
                     source=ctx.patch_set.source,
                     ran_in_envs=tuple(b.target for b in ctx.branches if b.env and b.env.probe))
    return "\n".join(wording.written(facts))


def evidence_region(branch: BranchRecord, ctx: BodyContext) -> str:
    """What the evidence region holds: the evidence as a ```text fence, then the record line."""
    return f"```text\n{evidence_text(branch, ctx)}\n```\n{rg.record_line(branch, ctx.kept)}"


def _docs(ctx: BodyContext) -> tuple[list[dict[str, str]], str] | None:
    """The rows of the 【资料变更】 table and its conclusion (None: no docs audit)."""
    if ctx.docs is None:
        return None
    rows = [{"version": _cell(e.version or NOT_FOUND_ZH), "listed": "是" if e.listed else "否",
             "support": _value(e.summary or None) if e.listed else "—", "path": e.path or ""}
            for e in ctx.docs]
    missing = [r["version"] for r in rows if r["listed"] == "否"]
    supports = {r["support"] for r in rows}
    if not rows:
        conclusion = "未找到任何资料版本目录，需人工确认。"
    elif missing:
        conclusion = f"以下版本缺少该 API 条目：{'、'.join(missing)}，需要资料 PR。"
    elif len(supports) == 1:
        conclusion = f"{_cn_count(len(rows))}个版本均已有条目，支持状态一致为“{supports.pop()}”，因此不创建资料 PR。"
    else:
        conclusion = "各版本均已有条目，但支持状态不一致，需人工确认。"
    return rows, conclusion


_KIND_ZH = {"resolution": "人工冲突解决结果", "variant": "已保存的分支补丁"}


def apply_notes_zh(records: list[BranchRecord]) -> list[str]:
    """How each branch's series went in, where a reviewer should know (Chinese, one line each)."""
    notes = []
    for rec in records:
        target = _prose(rec.target)
        source = rec.series_source
        if source is not None:
            kind = _KIND_ZH.get(source.origin.kind, "人工冲突解决结果")
            hops = "".join(f"，经 {_prose(h)} 分支" for h in source.hops)
            how = (f"的结果应用（该结果本身由 {_prose(source.origin.branch)} 分支的{kind}应用而来{hops}）"
                   if source.via is not None else f"的{kind}应用")
            notes.append(f"{target}：原补丁在该分支冲突，改用 {_prose(source.branch)} 分支{how}。")
        if rec.merged_files:
            files = _files_zh(rec.merged_files)
            notes.append(f"{target}：{files} 在补丁改动附近的内容与补丁来源不同，仅经三方合并应用，"
                         f"请评审时与较新分支的改动对照。")
        if rec.status == Status.ALREADY_PRESENT and rec.present:
            tests = "；".join(f"{wording.code(t.name)}（{wording.code(t.path)} 第 {t.line} 行"
                             + (f"，由 {_prose(t.commit)}「{_prose(t.subject)}」加入" if t.commit else "")
                             + "）" for t in rec.present)
            notes.append(f"{target}：补丁新增的测试已在该分支上：{tests}，无需 PR。")
        if rec.loose_files:
            files = _files_zh(rec.loose_files)
            notes.append(f"{target}：{files} 在忽略补丁上下文行后应用（每处改动在文件中只有唯一匹配位置），"
                         f"请评审时与较新分支的改动对照。")
    return notes


def template_variables(ctx: BodyContext) -> dict:
    """The names the body template sees."""
    vs = _Views(ctx)
    bm, ps = ctx.branch_map, ctx.patch_set
    docs = _docs(ctx)
    touched = {path for paths in ps.touched_paths.values() for path in paths}  # as applied
    changed = touched.union(*(p.paths for p in ps.patches))
    return {
        "api": ps.api,
        "title": ps.title,
        "title_ok": ps.title.strip().startswith("test:"),
        # the series changes tests and nothing else
        "only_tests": bool(changed) and all(p.startswith("test/") for p in changed),
        "issues": [{"ref": f"{bm.upstream}#{i}", "url": bm.issue_url(i)} for i in ps.issues],
        # the first issue alone, as templates written before `issues` name it ("" for none)
        "issue_url": bm.issue_url(ps.issues[0]) if ps.issues else "",
        "issue_ref": f"{bm.upstream}#{ps.issues[0]}" if ps.issues else "",
        "source_pr": source_pr(ctx),
        "source_kinds": [("需求", False), ("问题单", False), ("issue/工单", bool(ps.issues)),
                         ("重构优化", False), ("资料更新", False)],
        "upstream": bm.upstream,
        "fork": bm.fork,
        "target": vs.own.target,
        "branch_count": _cn_count(len(vs.views)),
        "branches": [{"target": _cell(v.target), "result": result_cell(v),
                      # the fork branch's name where it exists on the fork
                      "fork_branch": _cell(v.fork_branch) if v.fork_head or (
                          v.target == vs.own.target and v.commit) else "未推送"}
                     for v in vs.views],
        "issue_sentence": issue_sentence(vs, "该 Issue" if len(ps.issues) == 1 else "这些 Issue"),
        "handwritten": (ps.body or "").strip("\n") or None,
        "changed_files": sorted(touched) or sorted({t.path for t in ps.tests}),
        "tests": [wording.code(" ".join((t.path, *t.args))) for t in ps.tests],
        "docs": docs[0] if docs else None,
        "docs_conclusion": docs[1] if docs else "",
        "env_lines": _env_lines(vs),
        "commands": _commands(vs.views),
        "shared_notes": (_shared_notes(vs) + changes_notes_zh(vs.views)
                         + ([] if ps.tests else [wording.NO_TESTS_NOTE])),
        "runner_note": _runner_note(vs),
        "apply_notes": apply_notes_zh(ctx.branches),
        "evidence": evidence_region(vs.own, ctx),
    }


def render_body(ctx: BodyContext, existing: str | None = None) -> str:
    """The PR body for ``ctx.target``; with ``existing``, refresh only its generated regions.
    Template errors are BackportError naming the template and its line."""
    import jinja2

    search_dir = ctx.template.parent if ctx.template is not None else None
    name = ctx.template.name if ctx.template is not None else "pr_body.md.j2"
    shown = str(ctx.template) if ctx.template is not None else f"backport/report/templates/{name}"
    try:
        text = _environment(search_dir).get_template(name).render(**template_variables(ctx))
    except jinja2.TemplateNotFound as exc:
        raise BackportError("config", f"PR body template {shown} was not found.") from exc
    except jinja2.TemplateError as exc:
        frames = reversed(traceback.extract_tb(exc.__traceback__))
        line = (exc.lineno if isinstance(exc, jinja2.TemplateSyntaxError)
                else next((f.lineno for f in frames if Path(f.filename).name == name), None))
        where = f" line {line}" if line else ""
        raise BackportError("config", f"PR body template {shown}{where}: {exc.message}.") from exc
    fresh = redact(text.strip("\n") + "\n")
    return rg.refresh_body(existing, fresh) if existing and existing.strip() else fresh


@functools.lru_cache(maxsize=8)
def _environment(search_dir: Path | None) -> SandboxedEnvironment:
    """The sandboxed Jinja2 environment of the packaged templates or of ``search_dir``."""
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    loader: jinja2.BaseLoader = (jinja2.PackageLoader("backport.report", "templates")
                                 if search_dir is None else jinja2.FileSystemLoader(search_dir))
    env = SandboxedEnvironment(
        loader=loader, autoescape=False, undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
    )
    # `{{ value | untrusted("span") }}`; `inert`, its old name, for templates written before
    env.filters["untrusted"] = env.filters["inert"] = _untrusted_filter
    return env


def _untrusted_filter(text: object, where: str = "prose") -> str:
    import jinja2

    if where not in ("prose", "cell", "code", "span", "cell-span"):
        raise jinja2.TemplateRuntimeError(f"untrusted: unknown place {where!r}")
    return untrusted(text, where=where)  # type: ignore[arg-type]
