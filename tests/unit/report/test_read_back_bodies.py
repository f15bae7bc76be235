"""A body built on another host, each sibling from the record its PR carries, is the body the
journal's own records build, byte for byte, for every shape the evidence takes."""

from __future__ import annotations

import copy
import functools

import pytest

from backport.records import BranchRecord
from backport.report import regions as rg
from backport.report.body import BodyContext, render_body
from backport.report.regions import read_line
from tests.helpers import report_fixtures as fx


def _variants() -> dict[str, list[dict]]:
    """Journal records covering each shape the evidence takes."""
    base = fx.records()
    stale = copy.deepcopy(base)
    stale[1]["test"]["commit"] = "a" * 40  # tested at an older commit than the fork head
    moved = copy.deepcopy(base)
    moved[2]["fork_sha"] = "b" * 40  # someone else moved the fork branch after the test
    moved[2]["test"]["commit"] = moved[2]["pushed_sha"]
    failed = copy.deepcopy(base)
    failed[0] = fx.failing(failed[0])
    failed[0].update(pushed_sha=failed[0]["commit"], pr=base[0]["pr"])  # --pr-on-failure
    timed = copy.deepcopy(base)
    timed[3]["status"] = "test-failed"
    timed[3]["test"].update(ok=False, exit_code=None, timed_out=True, duration=120.4,
                            summary="", summary_lines=[])
    skipped = copy.deepcopy(base)
    skipped[1]["test"] = {"ok": None, "exit_code": None, "skipped": True,
                          "summary": "not run (--skip-tests)"}
    no_torch = copy.deepcopy(base)  # no interpreter with torch on the host: none ran
    for rec in no_torch:
        rec["test"] = {"ok": None, "exit_code": None, "skipped": True, "skip_cause": "no-torch",
                       "summary": "not run (no interpreter with torch on the host that ran it)"}
    autoload = copy.deepcopy(base)
    for rec in autoload:
        rec["env"]["autoload_disabled"] = True
        rec["env"]["probe"].update(torch_npu_loads=False, cann=None, npu_model=None,
                                   npu_count=0, visible_devices=None)
    unprobed = copy.deepcopy(base)
    unprobed[3]["env"] = {"name": "torch-2.12.0", "shared_with": ["v2.12.0", "master"]}
    carried = copy.deepcopy(base)  # series carried down from siblings, files merged or loose
    carried[1]["series_source"] = {"branch": "v2.12.0", "kind": "propagated",
                                   "via": {"branch": "master", "kind": "resolution"}}
    carried[2]["series_source"] = {"branch": "master", "kind": "resolution"}
    carried[2]["merged_files"] = [fx.TEST_PATH]
    carried[0]["loose_files"] = [fx.TEST_PATH, "test/other.py"]
    patch_tests = copy.deepcopy(base)  # the summary passed, one test the patch adds did not run
    patch_tests[0]["test"]["patch_tests"] = [["test_put_metric", "ok"]]
    patch_tests[2]["test"].update(ok=False, patch_tests=[["test_put_metric", "not run"]])
    patch_tests[2]["status"] = "test-failed"
    per_host = copy.deepcopy(base)
    per_host[0]["env"]["probe"]["platform"] = "Linux-4.19.90-x86_64-with-glibc2.28"
    per_host[0]["env"]["probe"]["python"] = "3.9.21"
    beyond = copy.deepcopy(base)  # the series changes torch_npu Python, C++ and docs files
    for rec in beyond:
        rec["test"]["changes"] = {"overlay": ["torch_npu/_compat/version.py"],
                                  "not_in_build": ["torch_npu/csrc/core/npu/NPUVersion.cpp"],
                                  "not_exercised": ["docs/zh/compat.md"]}
    beyond[0]["test"]["changes"]["overlay"] = []  # v2.7.1's environment has no torch_npu
    beyond[0]["test"]["changes"]["not_in_build"].insert(0, "torch_npu/_compat/version.py")
    return {"beyond_tests": beyond, "plain": base, "stale": stale, "moved": moved, "carried": carried, "failed": failed, "timed": timed,
            "skipped": skipped, "no_torch": no_torch, "autoload": autoload, "unprobed": unprobed, "per_host": per_host,
            "patch_tests": patch_tests}


VARIANTS = _variants()


@functools.cache
def _body(name: str, target: str) -> str:
    """``target``'s body of variant ``name`` as its own host renders it, rendered once: each is
    the direct body of one test and the sibling PR every other branch's tests read back."""
    return render_body(fx.context(target, recs=VARIANTS[name]))


def _read(recs: list[dict], rec: BranchRecord, body: str | None = None) -> BranchRecord:
    """``rec``'s branch as another host reads it from its PR (``body``: its body as its own
    host wrote it, rendered from ``recs`` when not given)."""
    body = render_body(fx.context(rec.target, recs=recs)) if body is None else body
    line = read_line(body, target=rec.target, fork_branch=rec.fork_branch)
    assert line is not None
    read = line[0]
    return read.read_from_pr(rec.pr.number, rec.pr.url) if rec.pr else read


def _read_back(recs: list[dict], own: str, name: str | None = None) -> BodyContext:
    """The context of ``own``'s body as another host builds it: every sibling from its PR
    (the PR bodies of variant ``name`` when given)."""
    branches = [rec if rec.target == own else
                _read(recs, rec, _body(name, rec.target) if name else None)
                for rec in fx.typed(recs)]
    return BodyContext(branch_map=fx.branch_map(), patch_set=fx.patch_set(), branches=branches,
                       target=own)


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("own", fx.TARGETS)
def test_a_body_built_from_read_back_records_is_the_same_body(name: str, own: str) -> None:
    recs = VARIANTS[name]
    direct = _body(name, own)
    assert render_body(_read_back(recs, own, name)) == direct


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_record_reads_back_as_published(name: str) -> None:
    for rec in fx.typed(VARIANTS[name]):
        body = _body(name, rec.target)
        read = read_line(body, target=rec.target, fork_branch=rec.fork_branch)
        assert read is not None and read[0] == rec.published()


def test_a_sibling_body_refreshed_from_its_own_record_is_unchanged() -> None:
    recs = VARIANTS["plain"]
    typed = fx.typed(recs)
    body = render_body(fx.context("v2.11.0", recs=recs))
    ctx = BodyContext(branch_map=fx.branch_map(), patch_set=fx.patch_set(),
                      branches=[typed[0], _read(recs, typed[1]), *typed[2:]], target="v2.11.0")
    assert render_body(ctx, existing=body) == body


def test_hosts_that_differ_show_their_environment_per_branch() -> None:
    """Each branch's platform, Python and device count come from the host that ran it."""
    recs = copy.deepcopy(VARIANTS["per_host"])
    recs[1]["env"]["probe"].update(npu_count=8, visible_devices="0,1,2,3,4,5,6,7")
    body = render_body(_read_back(recs, "master"))
    validation = rg.find_regions(body)["validation"].content(body)
    assert (f"- 主机平台：v2.7.1 Linux-4.19.90-x86_64-with-glibc2.28；v2.11.0 {fx.PLATFORM}；"
            f"v2.12.0 {fx.PLATFORM}；master {fx.PLATFORM}") in validation
    assert "- Python：v2.7.1 3.9.21；v2.11.0 3.11.15；v2.12.0 3.11.15；master 3.11.15" in validation
    assert ("- 可见设备数：v2.7.1 1（物理 NPU 0）；v2.11.0 8（物理 NPU 0,1,2,3,4,5,6,7）；"
            "v2.12.0 1（物理 NPU 0）；master 1（物理 NPU 0）") in validation


def test_the_patch_tests_read_back_decide_the_result() -> None:
    recs = VARIANTS["patch_tests"]
    read = {rec.target: _read(recs, rec) for rec in fx.typed(recs)}
    passed, missing = read[fx.TARGETS[0]].test, read[fx.TARGETS[2]].test
    assert passed is not None and passed.ok and passed.patch_tests == (("test_put_metric", "ok"),)
    assert missing is not None and missing.exit_code == 0
    assert missing.patch_tests == (("test_put_metric", "not run"),)
    assert missing.ok is False  # unittest's OK does not make a run without the patch's test pass
