"""A set made from an upstream PR names it: 合入来源 links the PR, the evidence carries SOURCE=,
and another host reading the evidence back keeps it."""

from __future__ import annotations

import dataclasses

import pytest

from backport.config.model import SourcePr
from backport.records import BranchRecord
from backport.report import regions as rg
from backport.report.body import BodyContext, render_body
from backport.report.evidence_parse import Evidence, read_evidence, record_of, source_of
from tests.helpers import report_fixtures as fx

SHA = "1292bcfa165ef69dd3cc3169ec4b1ac51a3b042f"
MERGED = SourcePr(number=42810, base="master", commit=SHA, merged=True, found_by="squash message")
OPEN = dataclasses.replace(MERGED, merged=False, found_by="head ref")


def _context(own: str, source: SourcePr, read_back: dict[str, Evidence] | None = None,
             branches: list[BranchRecord] | None = None) -> BodyContext:
    ps = dataclasses.replace(fx.patch_set(), source=source)
    return BodyContext(branch_map=fx.branch_map(), patch_set=ps,
                       branches=branches or fx.typed(fx.records()), target=own,
                       read_back=read_back or {})


def test_the_body_links_the_source_pr_and_its_issue() -> None:
    body = render_body(_context("v2.7.1", MERGED))
    source = rg.find_regions(body)["source"].content(body)
    assert "[Ascend/pytorch!42810](https://gitcode.com/Ascend/pytorch/pull/42810)" in source
    assert "已合入 `master`" in source and SHA[:12] in source
    assert "https://gitcode.com/Ascend/pytorch/issues/3216" in source
    evidence = read_evidence(body)
    assert evidence is not None
    assert evidence.fields["SOURCE"] == f"Ascend/pytorch!42810@{SHA}"
    assert source_of(evidence) == ("Ascend/pytorch", 42810, SHA)


def test_an_open_source_pr_is_said_to_be_not_merged() -> None:
    body = render_body(_context("v2.7.1", OPEN))
    source = rg.find_regions(body)["source"].content(body)
    assert "尚未合入 `master`" in source
    assert "已合入" not in source


def test_a_set_made_by_hand_names_no_source() -> None:
    body = render_body(fx.context("v2.7.1"))
    evidence = read_evidence(body)
    assert evidence is not None and "SOURCE" not in evidence.fields
    assert source_of(evidence) is None
    assert "源 PR" not in body


@pytest.mark.parametrize("own", fx.TARGETS)
def test_another_host_reading_the_evidence_back_keeps_source(own: str) -> None:
    recs = fx.records()
    branches: list[BranchRecord] = []
    read_back: dict[str, Evidence] = {}
    for rec in fx.typed(recs):
        if rec.target == own:
            branches.append(rec)
            continue
        evidence = read_evidence(render_body(_context(rec.target, MERGED)))
        assert evidence is not None
        branches.append(record_of(evidence, target=rec.target, fork_branch=rec.fork_branch,
                                  pr=rec.pr))
        read_back[rec.target] = evidence
    direct = render_body(_context(own, MERGED))
    assert render_body(_context(own, MERGED, read_back, branches)) == direct
    # The sibling's own PR, refreshed on this host from what it reads there, keeps SOURCE too.
    sibling = next(t for t in fx.TARGETS if t != own)
    refreshed = render_body(_context(sibling, MERGED, read_back, branches),
                            existing=render_body(_context(sibling, MERGED)))
    evidence = read_evidence(refreshed)
    assert evidence is not None and source_of(evidence) == ("Ascend/pytorch", 42810, SHA)
