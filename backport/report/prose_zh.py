"""The Chinese a PR body's prose says for what the run wrote in English.

The evidence block keeps the run's ``KEY=value`` English; every prose line says the same facts
in Chinese whole. What this module does not know (a note someone else wrote, a reason it has no
words for) is quoted as code rather than mixed into a Chinese sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from backport.envs.model import AUTOLOAD
from backport.report.evidence_fields import RUNNER
from backport.report.untrusted import untrusted

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
_PROPOSED_KIND_ZH = {"sync": "同步机器人的 PR", "cherry-pick": "GitCode 的 cherry-pick PR",
                     "backport": "backport 工具的 PR", "body": "描述中注明源 PR 的 PR"}
_PROPOSED_STATE_ZH = {"open": "尚未合入", "merged": "已合入"}

# A test's outcome as `envs/verbose.py` writes it.
_OUTCOME_ZH = {"ok": "通过", "FAIL": "失败", "ERROR": "出错", "skipped": "跳过",
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


def proposed_pr_zh(number: int, url: str, kind: str, state: str) -> str:
    """Another PR that carries the source: ``[!7](url)（同步机器人的 PR，尚未合入）``."""
    said = _PROPOSED_KIND_ZH.get(kind, "其他 PR")
    return f"[!{number}]({url})（{said}，{_PROPOSED_STATE_ZH.get(state, code(state))}）"


def outcome_zh(outcome: str) -> str:
    return _OUTCOME_ZH.get(outcome, code(outcome))


_PIN = re.compile(r"^(?P<dist>[\w.-]+): expected (?P<pin>.+?), (?:found (?P<found>.+)|not installed)$")


def mismatch_zh(line: str) -> str:
    """``torch: expected 2.7.1, found 2.13.0+cpu`` (``envs/pins.py``) said in Chinese."""
    match = _PIN.match(line)
    if not match:
        return code(line)
    found = f"实际为 {code(match['found'])}" if match["found"] else "未安装"
    return f"{code(match['dist'])} 要求 {code(match['pin'])}，{found}"


def seconds_zh(seconds: float) -> str:
    return f"{seconds:.0f} 秒"


# The phrases `envs/device.py` writes into a device note, each said in Chinese.
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


def _reason_zh(why: str) -> str:
    missing = _MISSING_LIB.match(why)
    if missing:
        return f"缺少 {code(missing['lib'])}"
    return "原因未知" if why == "reason unknown" else code(why)


def _phrase_zh(phrase: str) -> str:
    if phrase in _PHRASES:
        return _PHRASES[phrase]
    loadable = _NOT_LOADABLE.match(phrase)
    if loadable:
        return f"torch_npu 已安装但无法加载（{_reason_zh(loadable['why'])}）"
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
    said = [_phrase_zh(p) for p in phrases]
    if all(s == code(p) for s, p in zip(said, phrases, strict=True)):
        return code(note.strip())
    return "；".join(said)


def runner_note(warm: Sequence[str], isolated: Sequence[str]) -> str | None:
    """One sentence on how the tests were run, so differing times explain themselves; None
    when no branch ran in a warm worker (a fresh process is what ``COMMAND`` does)."""
    if not warm:
        return None
    text = (f"{'、'.join(warm)} 的测试在一个已导入 torch 的常驻 Python 进程中运行"
            f"（证据中的 {code(f'{RUNNER.key}=warm')}），torch 的导入不计入所报耗时，"
            "因此耗时可能明显短于在新进程中运行")
    if isolated:
        text += f"；{'、'.join(isolated)} 的测试在新启动的进程中运行（{code(f'{RUNNER.key}=isolated')}）"
    return (text + f"。在目标分支的源码目录下执行证据中的 {code('COMMAND')}（即上方“执行命令”），"
            "即可在新进程中复现该结果。")


def only_tests(paths: Sequence[str]) -> bool:
    """True when the series is known to change files under ``test/`` and nothing else."""
    return bool(paths) and all(p.startswith("test/") for p in paths)
