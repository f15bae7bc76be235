"""The evidence a body writes reads back into a record that renders the same body."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from backport.records import BranchRecord
from backport.report import regions as rg
from backport.report.body import BodyContext, render_body
from backport.report.evidence_parse import Evidence, parse_evidence, read_evidence, record_of
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
        rec["env"].update(torch_npu_loads=False, autoload_disabled=True, cann=None, npu=None,
                          visible_npus=0, visible_devices=None)
    unprobed = copy.deepcopy(base)
    unprobed[3]["env"] = {"name": "torch-2.12.0", "shared_with": ["v2.12.0", "master"]}
    carried = copy.deepcopy(base)  # series carried down from siblings, files merged or loose
    carried[1]["series_source"] = {"branch": "v2.12.0", "kind": "propagated",
                                   "via": {"branch": "master", "kind": "resolution"}}
    carried[2]["series_source"] = {"branch": "master", "kind": "resolution"}
    carried[2]["merged_files"] = [fx.TEST_PATH]
    carried[0]["loose_files"] = [fx.TEST_PATH, "test/other.py"]
    patch_tests = copy.deepcopy(base)  # the summary passed, one test the patch adds did not run
    patch_tests[0]["test"]["patch_tests"] = {"test_put_metric": "ok"}
    patch_tests[2]["test"].update(ok=False, patch_tests={"test_put_metric": "not run"})
    patch_tests[2]["status"] = "test-failed"
    per_host = copy.deepcopy(base)
    per_host[0]["env"]["platform"] = "Linux-4.19.90-x86_64-with-glibc2.28"
    per_host[0]["env"]["python"] = "3.9.21"
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


def _read_back(recs: list[dict], own: str) -> BodyContext:
    """The context of ``own``'s body as another host builds it: every sibling from its PR."""
    typed = fx.typed(recs)
    branches: list[BranchRecord] = []
    read_back: dict[str, Evidence] = {}
    for rec in typed:
        if rec.target == own:
            branches.append(rec)
            continue
        evidence = read_evidence(render_body(fx.context(rec.target, recs=recs)))
        assert evidence is not None
        branches.append(record_of(evidence, target=rec.target, fork_branch=rec.fork_branch,
                                  pr=rec.pr))
        read_back[rec.target] = evidence
    return BodyContext(branch_map=fx.branch_map(), patch_set=fx.patch_set(), branches=branches,
                       target=own, read_back=read_back)


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("own", fx.TARGETS)
def test_a_body_built_from_read_back_evidence_is_the_same_body(name: str, own: str) -> None:
    recs = VARIANTS[name]
    direct = render_body(fx.context(own, recs=recs))
    assert render_body(_read_back(recs, own)) == direct


def test_a_sibling_body_refreshed_from_its_own_evidence_keeps_that_evidence() -> None:
    recs = VARIANTS["plain"]
    body = render_body(fx.context("v2.11.0", recs=recs))
    evidence = read_evidence(body)
    assert evidence is not None
    rec = record_of(evidence, target="v2.11.0", fork_branch="test-put-metric-v2.11.0")
    ctx = BodyContext(branch_map=fx.branch_map(), patch_set=fx.patch_set(),
                      branches=[*fx.typed(recs[:1]), rec, *fx.typed(recs[2:])], target="v2.11.0",
                      read_back={"v2.11.0": evidence})
    assert render_body(ctx, existing=body) == body


def test_unknown_keys_round_trip_and_a_moved_head_marks_the_result_stale() -> None:
    recs = VARIANTS["plain"]
    body = render_body(fx.context("master", recs=recs))
    region = rg.find_regions(body)[rg.EVIDENCE]
    # A key this parser does not know (as a later version may add) survives a refresh.
    extended = region.content(body).replace("RESULT:", "PATCH_TESTS=test_put_metric ok\nRESULT:")
    body = body[:region.inner_start] + extended + body[region.inner_end:]
    evidence = read_evidence(body)
    assert evidence is not None
    assert evidence.fields["PATCH_TESTS"] == "test_put_metric ok"
    assert evidence.result_lines == ("Ran 7 tests in 0.086s", "OK")
    rec = record_of(evidence, target="master", fork_branch="test-put-metric-master")
    assert rec.test is not None and rec.test.ok and rec.test.exit_code == 0
    assert rec.env is not None and rec.env.fact("platform") == fx.PLATFORM
    assert rec.env.fact("npu_count") == 1 and rec.env.fact("visible_devices") == "0"
    moved = dataclasses.replace(rec, pushed_sha="c" * 40, fork_sha="c" * 40)
    ctx = BodyContext(branch_map=fx.branch_map(), patch_set=fx.patch_set(),
                      branches=[*fx.typed(recs[:3]), moved], target="master",
                      read_back={"master": evidence})
    refreshed = read_evidence(render_body(ctx, existing=body))
    assert refreshed is not None
    assert refreshed.fields["PATCH_TESTS"] == "test_put_metric ok"
    assert refreshed.head == "c" * 40
    assert refreshed.tested == rec.test.commit
    assert "STALE" in refreshed.fields


def test_every_rendered_line_reads_back() -> None:
    for recs in VARIANTS.values():
        for target in fx.TARGETS:
            body = render_body(fx.context(target, recs=recs))
            text = rg.find_regions(body)[rg.EVIDENCE].content(body)
            evidence = parse_evidence(text)
            assert "\n".join(evidence.lines) == text.strip().removeprefix("```text\n").removesuffix(
                "\n```")


def test_a_body_without_evidence_reads_as_none() -> None:
    assert read_evidence("") is None
    assert read_evidence("# 【功能验证】\n\nno block here\n") is None


def test_hosts_that_differ_show_their_environment_per_branch() -> None:
    """Each branch's platform, Python and device count come from the host that ran it."""
    recs = copy.deepcopy(VARIANTS["per_host"])
    recs[1]["env"].update(visible_npus=8, visible_devices="0,1,2,3,4,5,6,7")
    body = render_body(_read_back(recs, "master"))
    validation = rg.find_regions(body)["validation"].content(body)
    assert (f"- 主机平台：v2.7.1 Linux-4.19.90-x86_64-with-glibc2.28；v2.11.0 {fx.PLATFORM}；"
            f"v2.12.0 {fx.PLATFORM}；master {fx.PLATFORM}") in validation
    assert "- Python：v2.7.1 3.9.21；v2.11.0 3.11.15；v2.12.0 3.11.15；master 3.11.15" in validation
    assert ("- 可见设备数：v2.7.1 1（物理 NPU 0）；v2.11.0 8（物理 NPU 0,1,2,3,4,5,6,7）；"
            "v2.12.0 1（物理 NPU 0）；master 1（物理 NPU 0）") in validation


def test_the_patch_tests_read_back_decide_the_result() -> None:
    recs = VARIANTS["patch_tests"]
    read = {}
    for rec in fx.typed(recs):
        evidence = read_evidence(render_body(fx.context(rec.target, recs=recs)))
        assert evidence is not None
        read[rec.target] = record_of(evidence, target=rec.target, fork_branch=rec.fork_branch)
    passed, missing = read[fx.TARGETS[0]].test, read[fx.TARGETS[2]].test
    assert passed is not None and passed.ok and passed.patch_tests == (("test_put_metric", "ok"),)
    assert missing is not None and missing.exit_code == 0
    assert missing.patch_tests == (("test_put_metric", "not run"),)
    assert missing.ok is False  # unittest's OK does not make a run without the patch's test pass
