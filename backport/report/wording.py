"""How a record's facts are written: the evidence block's ``KEY=value`` lines (English, for
reviewers) and the Chinese the body's prose says for the same facts.

The evidence is a title, ``KEY=value`` lines and a result section, in the order of `TABLE`: one
`Field` row a key, written from a branch's `Facts` (``None`` leaves the line out); a new key is
one row. It is never read back: the other hosts read a branch's record from the hidden line in
the evidence region (`regions.record_line`). The prose says the same facts in Chinese whole;
what it has no words for (a note someone else wrote) is quoted as code, not mixed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from backport.config.model import SourcePr
from backport.envs.model import AUTOLOAD, NOT_FOUND
from backport.records import (
    SKIP_CAUSE_TEXT,
    SKIP_NO_TORCH,
    SKIP_ON_REQUEST,
    BranchRecord,
    TestResult,
)
from backport.report.untrusted import untrusted

NOT_PROBED = "not probed yet"  # no run has read the branch's environment yet
NOT_RUN = "none (not run)"
RESULT = "RESULT:"  # the heading of the result section
TIMED_OUT = "TIMED OUT"
NO_SUMMARY = "no test summary"
QUOTED = "> "  # before a summary line that would read as a line of the block

_TIMED_OUT = re.compile(r"^TIMED OUT(?: after (?P<seconds>\d+)s)?$")
_KEY_LINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Facts:
    """What one branch's evidence is written from."""

    record: BranchRecord
    upstream: str  # owner/repo of the upstream
    api: str | None  # None: the set names no API (no API= line)
    configured_env: str | None = None  # the environment branches.yaml names for the target
    source: SourcePr | None = None  # the upstream PR the set was made from
    ran_in_envs: tuple[str, ...] = ()  # the branches that ran in an environment: shared with

    @property
    def test(self) -> TestResult | None:
        """The test result, when tests ran (not skipped on request)."""
        test = self.record.test
        return test if test and not test.skipped else None


@dataclass(frozen=True)
class Field:
    """One ``KEY=value`` line: its key and how its value is written."""

    key: str
    write: Callable[[Facts], str | None]  # the value; None leaves the line out

    def lines(self, facts: Facts) -> list[str]:
        value = self.write(facts)
        return [] if value is None else [f"{self.key}={value}"]


def summary_lines(test: TestResult | None) -> list[str]:
    """The test summary lines of a record's ``test`` entry (``[]`` when there are none)."""
    if not test:
        return []
    if test.summary_lines:
        return [str(line) for line in test.summary_lines]
    return [test.summary] if test.summary else []


def exit_stated(lines: Sequence[str], code: object) -> bool:
    """True when the last summary line already gives the exit code (``no test summary; exit 1``)."""
    return bool(lines) and code is not None and lines[-1].endswith(f"exit {code}")


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def _val(value: object, missing: str = NOT_FOUND) -> str:
    return missing if value is None or value == "" else one_line(value)


def _probed(attr: str, key: str) -> Field:
    """A value the probe read; "not probed yet" when no run has read the environment."""
    def write(facts: Facts) -> str:
        env = facts.record.env
        return _val(env.fact(attr) if env else None, NOT_FOUND if env else NOT_PROBED)
    return Field(key, write)


def _visible_write(facts: Facts) -> str:
    env = facts.record.env
    count, devices = (env.fact("npu_count"), env.fact("visible_devices")) if env else (None, None)
    if count and devices:
        return f"{count} (PHYSICAL NPU {devices})"
    return _val(count, NOT_FOUND if env else NOT_PROBED)


def _env_write(facts: Facts) -> str:
    env = facts.record.env
    name = _val((env.name if env else None) or facts.configured_env)
    shared = [s for s in env.shared_with if s != facts.record.target
              and s in facts.ran_in_envs] if env else []
    if shared and env and env.name:
        name += f" (shared with {', '.join(shared)})"
    return name


def _series_write(facts: Facts) -> str | None:
    chain = []
    source = facts.record.series_source
    while source is not None:
        chain.append(f"{source.branch} {source.kind}")
        source = source.via
    return " < ".join(chain) or None


def _files_write(files: tuple[str, ...]) -> str | None:
    return ", ".join(files) or None


def _stale_write(facts: Facts) -> str | None:
    """Whether the head was pushed by this tool but not tested, or by someone else."""
    if not (facts.test and facts.record.stale):
        return None
    if facts.record.fork_sha:
        return ("the result below is of TESTED_COMMIT; HEAD_COMMIT was pushed to the fork branch "
                "by someone else and was not tested by this tool")
    return ("the result below is of TESTED_COMMIT; HEAD_COMMIT, which the fork branch now "
            "holds, was not tested by this run")


# Why the tests did not run, where the evidence words it otherwise than SKIP_CAUSE_TEXT.
_SKIP_REASON = {SKIP_ON_REQUEST: "skipped on request: --skip-tests",
                SKIP_NO_TORCH: "skipped: no interpreter with torch on the host that ran it"}


def _result_write(facts: Facts) -> list[str]:
    rec, test = facts.record, facts.test
    if rec.skipped and rec.test is not None:
        cause = rec.test.skip_cause
        return [f"RESULT: not run ({_SKIP_REASON.get(cause) or SKIP_CAUSE_TEXT[cause]})"]
    if not test:
        return [f"RESULT: not run ({rec.status})"]
    lines = [RESULT, *([quoted(one_line(s)) for s in summary_lines(test)] or [NO_SUMMARY])]
    if test.timed_out:
        seconds = test.duration
        lines.append(f"{TIMED_OUT} after {seconds:.0f}s" if isinstance(seconds, int | float)
                     else TIMED_OUT)
    return lines


def quoted(line: str) -> str:
    """A summary line as the result section writes it: behind :data:`QUOTED` when it would
    read as a line of the block (a key, ``RESULT:``, ``TIMED OUT``, no summary)."""
    structural = (_KEY_LINE.match(line) or line.startswith(("RESULT", QUOTED.rstrip()))
                  or _TIMED_OUT.match(line) or line == NO_SUMMARY)
    return QUOTED + line if structural else line


def _exit_write(facts: Facts) -> str:
    test = facts.test
    if not test:
        return NOT_RUN
    if test.exit_code is not None:
        return str(test.exit_code)
    return "none (killed)" if test.timed_out else "none"


def _changes(attr: str) -> Field:
    """The series' files beyond tests of one kind (``ChangeScope``), where it names any."""
    def write(facts: Facts) -> str | None:
        test = facts.test
        return _files_write(getattr(test.changes, attr)) if test else None
    return Field(attr.upper(), write)


def _note_write(facts: Facts) -> str:
    env = facts.record.env
    note = env.note if env else None
    if env and env.autoload_disabled and AUTOLOAD not in str(note or ""):
        note = f"{note}; " if note else ""
        note += f"ran with {AUTOLOAD}=0 (torch_npu not loaded)"
    return _val(note, "none")


SOURCE = Field("SOURCE", lambda f: f"{f.upstream}!{f.source.number}@{f.source.commit}"
               if f.source else None)  # the set's upstream PR: "Ascend/pytorch!42810@<sha>"
TARGET_BRANCH = Field("TARGET_BRANCH", lambda f: f.record.target)
RUNNER = Field("RUNNER", lambda f: _val(f.record.test.runner if f.record.test else None, NOT_RUN))
# Written only where the host refused the sandbox (tests ran without a PID namespace of their own).
ISOLATION = Field("ISOLATION", lambda f: "none" if f.test and f.test.isolation == "none" else None)

# Every line of the evidence in order (a function: lines that are no KEY=value). OVERLAY,
# NOT_IN_BUILD, NOT_EXERCISED: the series' files beyond tests run in the branch's version over the
# installed torch_npu, not in the build that ran, not exercised by any test.
TABLE: tuple[Field | Callable[[Facts], list[str]], ...] = (
    lambda f: [f"VALIDATION EVIDENCE / {f.upstream} / {f.record.fork_branch} → "
               f"{f.record.target}"],
    Field("API", lambda f: f.api),
    SOURCE,
    TARGET_BRANCH,
    Field("HEAD_COMMIT", lambda f: f.record.head or "none (no commit on the fork branch)"),
    *(_probed(attr, key) for attr, key in (
        ("platform", "PLATFORM"), ("python", "PYTHON"), ("torch", "TORCH"),
        ("torch_npu", "TORCH_NPU"), ("cann", "CANN"), ("npu_model", "NPU"))),
    Field("VISIBLE_NPU", _visible_write),
    Field("ENVIRONMENT", _env_write),
    RUNNER,
    ISOLATION,
    Field("COMMAND", lambda f: _val(f.record.test.command if f.record.test else None, NOT_RUN)),
    Field("SERIES_FROM", _series_write),
    Field("MERGED_FILES", lambda f: _files_write(f.record.merged_files)),
    Field("LOOSE_FILES", lambda f: _files_write(f.record.loose_files)),
    Field("TESTED_COMMIT", lambda f: one_line(f.test.commit) if f.test and f.record.stale else None),
    Field("STALE", _stale_write),  # the result is not of the head: who moved the fork branch
    _result_write,
    Field("test_exit_code", _exit_write),
    Field("PATCH_TESTS", lambda f: ", ".join(f"{name} {outcome}" for name, outcome in
                                             f.test.patch_tests) or None if f.test else None),
    *(_changes(attr) for attr in ("overlay", "not_in_build", "not_exercised")),
    Field("NOTE", _note_write),
)
KEYS = tuple(row.key for row in TABLE if isinstance(row, Field))


def written(facts: Facts) -> list[str]:
    """The evidence of one branch, line by line."""
    lines: list[str] = []
    for row in TABLE:
        lines += row.lines(facts) if isinstance(row, Field) else row(facts)
    return [untrusted(line, where="code") for line in lines]


# -- the Chinese of the prose ----------------------------------------------------------------
# Why a branch has no test result, by its status.
_STATUS_ZH = {
    "pending": "尚未运行",
    "fetched": "尚未运行",
    "applied": "补丁已应用，测试尚未运行",
    "tested": "测试已通过，尚未推送",
    "skipped": "未运行测试（已跳过），尚未推送",  # past its test step with none run
    "pushed": "已推送，PR 尚未创建",
    "done": "已完成",
    "planned": "试运行，未执行",
    "already-applied": "补丁已在目标分支上（相同 `patch-id`），无需 PR",
    "already-present": "补丁新增的测试已在目标分支上，无需 PR",
    "already-proposed": "该分支已有其他 PR 带入同一源 PR，未再创建 PR",
    "conflict": "补丁未能自动应用",
    "test-failed": "测试未通过",
    "env-missing": "该分支的运行环境不存在",
    "env-mismatch": "运行环境的 torch / torch_npu 版本与约束不符",
    "env-unavailable": "运行环境无法运行需要 NPU 的测试",
    "fork-diverged": "Fork 分支已被他人更新，本次未处理",
    "failed": "运行出错",
}

# How another PR carries the set's source PR (`ProposedPr.kind`), and its state.
PROPOSED_KIND_ZH = {"sync": "同步机器人的 PR", "cherry-pick": "GitCode 的 cherry-pick PR",
                     "backport": "backport 工具的 PR", "body": "描述中注明源 PR 的 PR"}
PROPOSED_STATE_ZH = {"open": "尚未合入", "merged": "已合入"}

# A test's outcome as `envs/summary.py` (`outcomes_of`) writes it.
OUTCOME_ZH = {"ok": "通过", "FAIL": "失败", "ERROR": "出错", "skipped": "跳过",
               "expected failure": "预期失败", "unexpected success": "意外通过",
               "not run": "未运行"}

# Why tests did not run on purpose, by `records.TestResult.skip_cause`.
SKIPPED_ZH = {"request": "未运行：按 `--skip-tests` 跳过测试",
              "no-torch": "未运行：运行本工具的主机上没有装有 torch 的 Python 解释器",
              "dry-no-envs": "未运行：测试环境尚未构建（试运行）",
              "no-tests": "未运行：源 PR 未新增或修改测试，没有可运行的测试"}

# The validation section's note for a set that lists no test (a PR that adds or changes none).
NO_TESTS_NOTE = ("本 PR 未经本地测试验证：源 PR 未新增或修改测试，本工具没有运行任何测试；"
                 "改动是否正确以评审和 PR CI 结果为准。")


def code(text: str) -> str:
    """``text`` as inline code that stays one code span in a table cell or a sentence."""
    return untrusted(text, where="cell-span")


def status_zh(status: str) -> str:
    """Why a branch in ``status`` has no test result, in Chinese."""
    return _STATUS_ZH.get(str(status), f"状态 {code(str(status))}")


_PIN = re.compile(r"^(?P<dist>[\w.-]+): expected (?P<pin>.+?), (?:found (?P<found>.+)|not installed)$")


def mismatch_zh(line: str) -> str:
    """``torch: expected 2.7.1, found 2.13.0+cpu`` (`envs.probe.pin_mismatches`) in Chinese."""
    match = _PIN.match(line)
    if not match:
        return code(line)
    found = f"实际为 {code(match['found'])}" if match["found"] else "未安装"
    return f"{code(match['dist'])} 要求 {code(match['pin'])}，{found}"


# The phrases `envs/probe.py` (`device_verdict`) writes into a device note, in Chinese.
_MISSING_LIB = re.compile(r"^(?P<lib>\S+\.so\S*) missing$")
_NOT_LOADABLE = re.compile(r"^torch_npu present but not loadable \((?P<why>.*)\)$")
_VISIBLE = re.compile(r"^(?P<count>\d+) NPUs? visible(?: \((?P<model>[^)]*)\))?(?: with (?P<devices>.+))?$")
_PHRASES = {
    "torch_npu not installed": "未安装 torch_npu",
    "torch_npu loaded": "torch_npu 已加载",
    "no NPU visible": "未检测到可见 NPU",
    "device: npu needs a visible NPU": f"补丁集声明 {code('device: npu')}，需要可见的 NPU",
    f"ran with {AUTOLOAD}=0": f"测试在 {code(f'{AUTOLOAD}=0')} 下运行",
    f"ran with {AUTOLOAD}=0 (torch_npu not loaded)":
        f"测试在 {code(f'{AUTOLOAD}=0')} 下运行（未加载 torch_npu）",
}


def _phrase_zh(phrase: str) -> str:
    if phrase in _PHRASES:
        return _PHRASES[phrase]
    loadable = _NOT_LOADABLE.match(phrase)
    if loadable:
        why, missing = loadable["why"], _MISSING_LIB.match(loadable["why"])
        why = (f"缺少 {code(missing['lib'])}" if missing else
               "原因未知" if why == "reason unknown" else code(why))
        return f"torch_npu 已安装但无法加载（{why}）"
    visible = _VISIBLE.match(phrase)
    if visible:
        text = f"可见 {visible['count']} 个 NPU"
        if visible["model"]:
            text += f"（{visible['model']}）"
        if visible["devices"]:
            text += f"，设备号 {visible['devices']}"
        return text
    return code(phrase)


def device_note_zh(note: str) -> str:
    """The device note of the evidence (``torch_npu loaded; 1 NPU visible``) in Chinese; a
    note the run did not write is quoted whole."""
    phrases = [p.strip() for p in note.split("; ") if p.strip()]
    phrases_zh = [_phrase_zh(p) for p in phrases]
    if all(s == code(p) for s, p in zip(phrases_zh, phrases, strict=True)):
        return code(note.strip())
    return "；".join(phrases_zh)


