"""A set made from an upstream PR names it: 合入来源 links the PR, the evidence carries SOURCE=,
and another host rendering a body from the records it reads back keeps it."""

from __future__ import annotations

import dataclasses

import pytest

from backport.config.model import SourcePr
from backport.records import BranchRecord
from backport.report import regions as rg
from backport.report.body import BodyContext, render_body
from tests.helpers import report_fixtures as fx
from tests.helpers.evidence import evidence_fields, shared_record

SHA = "1292bcfa165ef69dd3cc3169ec4b1ac51a3b042f"
MERGED = SourcePr(number=42810, base="master", commit=SHA, merged=True, found_by="squash message")
OPEN = dataclasses.replace(MERGED, merged=False, found_by="head ref")


def _context(own: str, source: SourcePr,
             branches: list[BranchRecord] | None = None) -> BodyContext:
    ps = dataclasses.replace(fx.patch_set(), source=source)
    return BodyContext(branch_map=fx.branch_map(), patch_set=ps,
                       branches=branches or fx.typed(fx.records()), target=own)


def test_the_body_links_the_source_pr_and_its_issue() -> None:
    body = render_body(_context("v2.7.1", MERGED))
    source = rg.find_regions(body)["source"].content(body)
    assert "[Ascend/pytorch!42810](https://gitcode.com/Ascend/pytorch/pull/42810)" in source
    assert "已合入 `master`" in source and SHA[:12] in source
    assert "https://gitcode.com/Ascend/pytorch/issues/3216" in source
    assert evidence_fields(body)["SOURCE"] == f"Ascend/pytorch!42810@{SHA}"


def test_an_open_source_pr_is_said_to_be_not_merged() -> None:
    body = render_body(_context("v2.7.1", OPEN))
    source = rg.find_regions(body)["source"].content(body)
    assert "尚未合入 `master`" in source
    assert "已合入" not in source


def test_a_set_made_by_hand_names_no_source() -> None:
    body = render_body(fx.context("v2.7.1"))
    assert "SOURCE" not in evidence_fields(body)
    assert "源 PR" not in body


@pytest.mark.parametrize("own", fx.TARGETS)
def test_another_host_reading_the_records_back_keeps_source(own: str) -> None:
    branches: list[BranchRecord] = []
    for rec in fx.typed(fx.records()):
        if rec.target == own:
            branches.append(rec)
            continue
        read = shared_record(render_body(_context(rec.target, MERGED)), rec.target)
        branches.append(read.read_from_pr(rec.pr.number, rec.pr.url) if rec.pr else read)
    direct = render_body(_context(own, MERGED))
    assert render_body(_context(own, MERGED, branches)) == direct
    # The sibling's own PR, refreshed on this host from what it reads there, keeps SOURCE too.
    sibling = next(t for t in fx.TARGETS if t != own)
    refreshed = render_body(_context(sibling, MERGED, branches),
                            existing=render_body(_context(sibling, MERGED)))
    assert evidence_fields(refreshed)["SOURCE"] == f"Ascend/pytorch!42810@{SHA}"
