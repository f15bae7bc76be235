"""Small output defects a maintainer meets first: skipped tests, cut paths, unknown branches."""

from __future__ import annotations

import dataclasses
import io

import pytest
from rich.console import Console

from backport.errors import BackportError
from backport.pipeline.journal import select_targets
from backport.records import BranchRecord
from backport.records import TestResult as Result
from backport.report.progress import Progress
from backport.report.summary import render_table, report_rows
from backport.states import Status
from tests.helpers import report_fixtures as fx


def test_a_branch_whose_tests_were_skipped_is_not_shown_as_tested() -> None:
    record = BranchRecord("v2.7.1", "test-put-metric-v2.7.1", status=Status.TESTED,
                          commit="7eee9eb92" + "0" * 31, test=Result.skipped_for())
    (row,) = report_rows([record])
    assert row["status"] == "skipped" and row["test"] == "not run (--skip-tests)"
    out = io.StringIO()
    render_table([record], Console(file=out, width=200, force_terminal=False, no_color=True))
    assert "tested" not in out.getvalue()


def test_quiet_mode_prints_a_conflict_path_whole() -> None:
    path = "/tmp/" + "n" * 150 + "/.backport/worktrees/put_metric/v2.7.1"
    message = f"patch 0001 does not apply; resolve it in {path}, then run `backport continue`"
    out = io.StringIO()
    with Progress(Console(file=out, width=80, force_terminal=False), quiet=True) as progress:
        progress.event("v2.7.1", "applied", "x" * 300)
        progress.event("v2.7.1", "conflict", message)
    assert out.getvalue() == f"[v2.7.1] conflict: {message}\n"


def test_an_unknown_branch_names_every_patch_set_and_suggests_the_near_one() -> None:
    one = fx.patch_set()
    other = dataclasses.replace(one, name="is_conj")
    with pytest.raises(BackportError) as info:
        select_targets([one, other], ("v2.7",))
    assert info.value.message.startswith("branch 'v2.7' is not a target of any patch set "
                                         "(is_conj, put_metric")
    assert "did you mean 'v2.7.1'?" in info.value.message
    with pytest.raises(BackportError) as info:
        select_targets([one], ("v2.7",))
    assert info.value.message.startswith("branch 'v2.7' is not a target of patch set put_metric")
    assert "did you mean 'v2.7.1'?" in info.value.message
