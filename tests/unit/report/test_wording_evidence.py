"""The evidence table: one row per line, written by the body for reviewers."""

from __future__ import annotations

import pytest

from backport.report import regions as rg
from backport.report import wording as ef
from backport.report.body import render_body
from tests.helpers import report_fixtures as fx
from tests.helpers.evidence import evidence_fields, shared_record


def test_a_new_key_is_one_row_written(monkeypatch: pytest.MonkeyPatch) -> None:
    source = ef.Field("LINTED", lambda f: f"{f.record.target}#77")  # say, a lint step's verdict
    at = ef.TABLE.index(ef.TARGET_BRANCH) + 1
    monkeypatch.setattr(ef, "TABLE", (*ef.TABLE[:at], source, *ef.TABLE[at:]))
    body = render_body(fx.context("v2.11.0"))
    lines = rg.find_regions(body)[rg.EVIDENCE].content(body).splitlines()
    first = lines.index("TARGET_BRANCH=v2.11.0")  # rows before may write no line
    head = shared_record(body, "v2.11.0").head
    assert lines[first:first + 3] == ["TARGET_BRANCH=v2.11.0", "LINTED=v2.11.0#77",
                                      f"HEAD_COMMIT={head}"]


def test_every_line_written_is_a_row_of_the_table() -> None:
    body = render_body(fx.context("master"))
    text = rg.find_regions(body)[rg.EVIDENCE].content(body)
    keys = list(evidence_fields(body))
    assert keys == [key for key in ef.KEYS if key in keys]  # in the table's order
    assert set(keys) >= {"API", "HEAD_COMMIT", "NOTE", "test_exit_code"}
    assert ef.RESULT in text


@pytest.mark.parametrize(("code", "timed_out", "patch_tests", "ok"), [
    (0, False, (), True), (1, False, (), False), (0, True, (), False),
    (0, False, (("test_a", "ok"), ("test_b", "not run")), False),
])
def test_a_result_read_back_is_ok_by_the_same_rule_as_a_run(
        code: int, timed_out: bool, patch_tests: tuple, ok: bool) -> None:
    recs = fx.records()
    rec = recs[3]
    rec["test"].update(exit_code=code, timed_out=timed_out, ok=ok,
                       patch_tests=[list(pair) for pair in patch_tests])
    rec["status"] = "done" if ok else "test-failed"
    read = shared_record(render_body(fx.context("master", recs=recs)), "master")
    assert read.test is not None and read.test.ok is ok
