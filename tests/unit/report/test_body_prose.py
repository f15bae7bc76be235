"""What a reviewer signs: every prose line of every body state speaks Chinese whole, and no
"不涉及" or ticked box stands without the basis the tool established (issue 30 items 1-3)."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest

from backport.envs.model import Probe
from backport.envs.probe import device_verdict
from backport.records import BranchRecord
from backport.report import regions as rg
from backport.report.body import BodyContext, render_body
from backport.report.regions import read_line
from backport.report.wording import device_note_zh
from tests.helpers import report_fixtures as fx

# Words the seed's Chinese prose itself uses as names of things (its register).
TERMS = ("torch-npu", "torch_npu", "PyTorch", "torch", "Python", "CANN", "NPU", "API", "PR",
         "Issue", "Fork", "CI", "CheckList", "Tensor",
         "issue")  # the Ascend template's own label "issue/工单"
OVERLAY, CPP, DOC = "torch_npu/utils/metrics.py", "torch_npu/csrc/metrics.cpp", "docs/metrics.md"
OTHER_HOST_NOTE = "torch_npu present but not loadable (libhccl.so missing); ran with " \
                  "TORCH_DEVICE_BACKEND_AUTOLOAD=0; no NPU visible"


def _states() -> dict[str, list[dict]]:
    """Journal records covering every state a body can show for a branch."""
    base = fx.records()
    states: dict[str, list[dict]] = {"plain": base}

    def variant(name: str) -> list[dict]:
        states[name] = copy.deepcopy(base)
        return states[name]

    conflict = variant("conflict")
    conflict[3].update(env=None, test=None, status="conflict", conflicts=["test/a.py"],
                       commit=None, pushed_sha=None, pr=None)
    failure = variant("failure")
    failure[0] = fx.failing(failure[0])
    failure[0]["test"]["patch_tests"] = [["test_put_metric", "FAIL"]]
    skipped = variant("skipped")
    skipped[1]["test"] = {"ok": None, "exit_code": None, "skipped": True,
                          "summary": "not run (--skip-tests)"}
    pending = variant("pending")
    for rec in pending[1:]:
        rec.update(status="pending", test=None, env=None, commit=None, pushed_sha=None, pr=None)
    stale = variant("stale")
    stale[1]["test"]["commit"] = "a" * 40
    moved = variant("moved")
    moved[2]["fork_sha"] = "b" * 40
    moved[2]["test"]["commit"] = moved[2]["pushed_sha"]
    applied = variant("already-applied")
    applied[2].update(status="already-applied", test=None, commit=None, pushed_sha=None, pr=None)
    present = variant("already-present")
    present[2].update(status="already-present", test=None, commit=None, pushed_sha=None, pr=None,
                      present=[{"path": fx.TEST_PATH, "name": "TestMetrics.test_put_metric",
                                "line": 40, "commit": "abc1234", "subject": "add put_metric test"}])
    mismatch = variant("env-mismatch")
    mismatch[1].update(status="env-mismatch", test=None,
                       mismatches=["torch: expected 2.11.0, found 2.13.0+cpu"])
    for name in ("env-missing", "env-unavailable", "failed", "planned", "fork-diverged"):
        variant(name)[0].update(status=name, test=None, pr=None, pushed_sha=None)
    timed = variant("timed-out")
    timed[3]["status"] = "test-failed"
    timed[3]["test"].update(ok=False, exit_code=None, timed_out=True, duration=120.4,
                            summary="", summary_lines=[])
    autoload = variant("autoload")
    for rec in autoload:
        rec["env"].update(autoload_disabled=True, note=OTHER_HOST_NOTE)
        rec["env"]["probe"].update(torch_npu_loads=False, cann=None, npu_model=None,
                                   npu_count=0, visible_devices=None)
    beyond = variant("beyond-tests")  # the series changes torch_npu code, C++ and docs too
    for rec in beyond:
        rec["test"]["changes"] = {"overlay": [OVERLAY], "not_in_build": [CPP],
                                  "not_exercised": [DOC]}
    mixed = variant("isolated-and-warm")
    mixed[1]["test"].update(runner="isolated", summary_lines=["Ran 7 tests in 2.010s", "OK"])
    return states


STATES = _states()


def _read_from_prs(recs: list[dict]) -> dict[str, BranchRecord | None]:
    """Each branch as another host reads it from its PR's record (None where its body carries
    none); read once per state, since every branch's body builds on the same siblings."""
    read: dict[str, BranchRecord | None] = {}
    for rec in fx.typed(recs):
        line = read_line(render_body(fx.context(rec.target, recs=recs)), target=rec.target,
                         fork_branch=rec.fork_branch)
        back = line[0] if line else None
        read[rec.target] = back.read_from_pr(rec.pr.number, rec.pr.url) if back and rec.pr \
            else back
    return read


def _context(recs: list[dict], own: str, *,
             read: dict[str, BranchRecord | None] | None = None) -> BodyContext:
    """The body of ``own``; with ``read`` (:func:`_read_from_prs`) every sibling is read from
    its PR's record, as another host builds the body."""
    ps = fx.patch_set()
    if any((rec.get("test") or {}).get("changes") for rec in recs):
        ps = dataclasses.replace(ps, touched_paths={t: (fx.TEST_PATH, OVERLAY, CPP, DOC)
                                                    for t in fx.TARGETS})
    if read is None:
        ctx = fx.context(own, recs=recs)
        ctx.patch_set = ps
        return ctx
    branches: list[BranchRecord] = []
    for rec in fx.typed(recs):
        sibling = read[rec.target]
        branches.append(rec if rec.target == own or sibling is None else sibling)
    return BodyContext(branch_map=fx.branch_map(), patch_set=ps, branches=branches, target=own)


def _names(recs: list[dict]) -> list[str]:
    """What a prose line may quote as it is: names, versions, paths, the tests' own output."""
    names = [fx.PLATFORM, "Ascend910_9382", "lgxxx/pytorch", "Ascend/pytorch", *fx.ENVS.values()]
    for rec in recs:
        names += [rec["target"], rec["fork_branch"], *rec.get("conflicts", [])]
        if rec.get("env"):
            packages = (rec["env"].get("probe") or {}).get("packages") or {}
            names += [rec["env"]["name"], str(packages.get("torch")),
                      str(packages.get("torch_npu"))]
        if rec.get("test"):
            names += rec["test"].get("summary_lines") or []
            names += [name for name, _ in rec["test"].get("patch_tests") or []]
    return sorted({n for n in names if n and n != "None"}, key=len, reverse=True)


def prose_lines(body: str) -> list[str]:
    """The body's Chinese prose: no fences, no evidence, no comments, no markers."""
    evidence = rg.find_regions(body)[rg.EVIDENCE]
    body = body[:evidence.start] + body[evidence.end:]
    body = re.sub(r"```.*?```", "", body, flags=re.S)
    body = re.sub(r"<!--.*?-->", "", body, flags=re.S)
    return [line for line in body.splitlines() if line.strip()]


def latin_fragments(line: str, names: list[str]) -> list[str]:
    """Latin-letter fragments left in ``line`` once code, URLs, names and terms are taken out."""
    line = re.sub(r"`[^`]*`", " ", line)
    line = re.sub(r"https?://\S+", " ", line)
    line = re.sub(r"「[^」]*」", " ", line)  # a quoted commit subject
    for name in names:
        line = line.replace(name, " ")
    for term in TERMS:
        line = re.sub(rf"(?<![A-Za-z_-]){re.escape(term)}(?![A-Za-z_-])", " ", line)
    line = re.sub(r"\b[0-9a-f]{7,40}\b", " ", line)  # a commit
    line = re.sub(r"\b\d+(?:\.\d+)+[A-Za-z0-9.+]*", " ", line)  # a version: 9.1.0.beta1
    line = re.sub(r"\[[x ]\]", " ", line)  # a check box
    return re.findall(r"[A-Za-z][A-Za-z0-9_.+-]*", line)


@pytest.mark.parametrize("other_host", [False, True], ids=["this-host", "another-host"])
@pytest.mark.parametrize("state", sorted(STATES))
def test_every_prose_line_of_every_state_is_chinese(state: str, other_host: bool) -> None:
    recs = STATES[state]
    names = _names(recs)
    read = _read_from_prs(recs) if other_host else None
    for own in fx.TARGETS:
        body = render_body(_context(recs, own, read=read))
        bad = {line: found for line in prose_lines(body) if (found := latin_fragments(line, names))}
        assert not bad, f"{state} / {own}: {bad}"
        claims = [line for line in prose_lines(body) if "不涉及" in line]
        assert all("不涉及：本 PR 只修改 `test/` 下的文件" in line for line in claims)
        assert bool(claims) == (state != "beyond-tests"), claims  # only tests changed: basis
        checklist = body[body.index("# 【CheckList】"):]
        assert all("（本工具已核对" in line for line in checklist.splitlines()
                   if line.startswith("- [x]"))


def test_the_prose_check_finds_the_fragments_the_issue_names() -> None:
    names = _names(STATES["plain"])
    assert latin_fragments("- CANN：未找到 (not found)", names) == ["not", "found"]
    assert latin_fragments("| v2.11.0 | 未运行：pending（尚未运行） |", names) == ["pending"]
    assert latin_fragments("- 可见设备数：1（物理 NPU 0）", names) == []


@pytest.mark.parametrize("loads,error,count,device", [
    (None, None, 0, "none"), (None, None, 0, "npu"),
    (False, "libhccl.so: cannot open shared object file", 0, "none"),
    (False, "ImportError: boom", 0, "npu"),
    (True, None, 0, "none"), (True, None, 0, "npu"), (True, None, 2, "npu"),
])
def test_every_device_note_the_run_writes_reads_in_chinese(loads: bool | None, error: str | None,
                                                           count: int, device: str) -> None:
    probe = Probe(env_name="torch-2.7.1", interpreter="~/envs/torch-2.7.1/bin/python",
                  platform=fx.PLATFORM, python="3.11.15",
                  packages={"torch": "2.7.1", "torch_npu": "2.7.1" if loads is not None else None},
                  cann=None, torch_npu_loads=loads, torch_npu_error=error,
                  npu_model="Ascend910B4" if count else None, npu_count=count,
                  visible_devices="0,1" if count else None)
    note = device_verdict(probe, device).note
    zh = device_note_zh(note)
    assert latin_fragments(zh, ["Ascend910B4", "0,1"]) == [], (note, zh)
    if error and "libhccl" in error:
        assert "`libhccl.so`" in zh and "`TORCH_DEVICE_BACKEND_AUTOLOAD=0`" in zh


def test_a_note_the_tool_did_not_write_is_quoted_not_mixed_in() -> None:
    assert device_note_zh("pure Python API") == "`pure Python API`"


def _section(body: str, title: str) -> str:
    start = body.index(f"# 【{title}】")
    return body[start:body.index("\n# 【", start + 1)]


def test_not_applicable_is_written_only_with_its_basis() -> None:
    body = render_body(fx.context("v2.7.1"))
    for title in ("资料变更", "接口变更"):
        section = _section(body, title)
        assert "不涉及：本 PR 只修改 `test/` 下的文件" in section
    beyond = dataclasses.replace(fx.patch_set(), touched_paths={
        t: (fx.TEST_PATH, "torch_npu/utils/metrics.py") for t in fx.TARGETS})
    ctx = fx.context("v2.7.1")
    ctx.patch_set = beyond
    body = render_body(ctx)
    for title in ("资料变更", "接口变更"):
        section = _section(body, title)
        assert "不涉及" not in section.replace("<!--", "\0").split("\0")[0], section
        assert "<!-- " in section  # the template's prompt is left for the author


def test_a_ticked_box_says_the_tool_checked_it() -> None:
    body = render_body(fx.context("v2.7.1"))
    checklist = body[body.index("# 【CheckList】"):]
    ticked = [line for line in checklist.splitlines() if line.startswith("- [x]")]
    assert ticked == ["- [x] PR 标题正确使用 `test:` 类型标签（本工具已核对标题以 `test:` 开头）"]


def test_the_runner_is_explained_once_with_how_to_reproduce() -> None:
    body = render_body(fx.context("v2.7.1", recs=STATES["isolated-and-warm"]))
    prose = "\n".join(prose_lines(body))
    assert prose.count("已导入 torch") == 1
    assert "`RUNNER=warm`" in prose and "`RUNNER=isolated`" in prose and "`COMMAND`" in prose
    line = next(line for line in prose.splitlines() if "已导入 torch" in line)
    assert "v2.7.1、v2.12.0、master" in line and "v2.11.0" in line
    warm_only = "\n".join(prose_lines(render_body(fx.context("v2.7.1"))))
    assert warm_only.count("已导入 torch") == 1 and "`RUNNER=isolated`" not in warm_only
    nothing_ran = copy.deepcopy(STATES["plain"])
    for rec in nothing_ran:
        rec.update(test=None, status="pending")
    assert "已导入 torch" not in render_body(fx.context("v2.7.1", recs=nothing_ran))


def test_a_branch_now_in_conflict_is_not_said_to_have_run_its_tests() -> None:
    """A conflict on a re-run keeps the record's earlier result, but its row says no test ran:
    the runner's sentence does not name it either."""
    recs = copy.deepcopy(STATES["plain"])
    for rec in recs:
        if rec["target"] == "v2.11.0":
            rec.update(status="conflict", conflicts=["test/test_metrics_api.py"])
    prose = "\n".join(prose_lines(render_body(fx.context("v2.7.1", recs=recs))))
    line = next(line for line in prose.splitlines() if "已导入 torch" in line)
    assert "v2.11.0" not in line and "v2.7.1" in line
    assert "冲突" in prose


def test_a_branch_now_in_conflict_is_not_said_to_be_pre_validated_in_a_shared_environment() -> None:
    """The shared-environment sentence says a branch's test ran in another's environment: it
    follows the row, like the runner's sentence, and leaves out a branch whose row ran nothing."""
    def shared(recs: list[dict]) -> list[str]:
        prose = prose_lines(render_body(fx.context("v2.7.1", recs=recs)))
        return [line for line in prose if line.startswith("master 与 v2.12.0 共用")]

    recs = copy.deepcopy(STATES["plain"])
    assert shared(recs)  # master runs in v2.12.0's environment
    for rec in recs:
        if rec["target"] == "master":
            rec.update(status="conflict", conflicts=["test/test_metrics_api.py"])
    assert shared(recs) == []
