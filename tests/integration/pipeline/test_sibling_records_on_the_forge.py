"""Another host reads each sibling from the record its PR carries: a reviewer's edit of the
evidence text changes nothing, a tampered record is no record, and `status --from-forge` and the
refresh of sibling PRs read the same."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from backport.forge.local import LocalForge
from backport.pipeline.pr_step import forge_records, read_set, refresh_sibling_pr
from backport.pipeline.session import BranchJob
from backport.report.body import render_body
from tests.helpers import report_fixtures as fx

from .conftest import journal_holding

TARGET = "v2.11.0"


def _forge(tmp_path: Path) -> LocalForge:
    bm = fx.branch_map()
    return LocalForge(tmp_path / "forge.sqlite", upstream=bm.upstream, fork=bm.fork)


def _branch_map(tmp_path: Path):
    return dataclasses.replace(fx.branch_map(), fork_url=str(tmp_path / "no-fork"))


def test_a_reviewer_editing_a_siblings_evidence_text_changes_no_result(tmp_path: Path) -> None:
    forge, bm, ps = _forge(tmp_path), _branch_map(tmp_path), fx.patch_set()
    recs = fx.records()
    body = render_body(fx.context(TARGET, recs=recs))
    pr = forge.create_pr(f"test-put-metric-{TARGET}", TARGET, ps.title, body)
    edited = body.replace("test_exit_code=0", "test_exit_code=1").replace("\nOK\n", "\nFAILED\n")
    forge.update_pr(pr.number, title=pr.title, body=edited)
    state = read_set(forge, ps, bm)
    expected = next(r for r in fx.typed(recs) if r.target == TARGET).published()
    assert state.shared[TARGET] == expected
    _, records = forge_records(forge, ps, bm)
    shown = records[TARGET]
    assert shown.test is not None and shown.test.ok is True and shown.test.exit_code == 0


def test_a_tampered_record_is_no_record_and_the_pr_is_still_listed(tmp_path: Path) -> None:
    forge, bm, ps = _forge(tmp_path), _branch_map(tmp_path), fx.patch_set()
    body = render_body(fx.context(TARGET))
    tampered = body.replace('"status":"done"', '"status":"done","test":"forged"')
    pr = forge.create_pr(f"test-put-metric-{TARGET}", TARGET, ps.title, tampered)
    state = read_set(forge, ps, bm)
    assert state.prs[TARGET].number == pr.number and TARGET not in state.shared
    _, records = forge_records(forge, ps, bm)
    assert records[TARGET].test is None  # rendered as a branch with no result, never an error


def test_a_pr_that_carries_no_record_is_left_to_the_host_that_knows_it(tmp_path: Path) -> None:
    """A sibling PR written before the record line existed (or whose line was deleted) is not
    rewritten by a host whose journal knows nothing of that branch: its evidence stays."""
    forge, bm, ps = _forge(tmp_path), _branch_map(tmp_path), fx.patch_set()
    recs = fx.records()
    body = render_body(fx.context(TARGET, recs=recs))
    old = re.sub(r"\n<!-- backport:record v1 .* -->", "", body)
    pr = forge.create_pr(f"test-put-metric-{TARGET}", TARGET, ps.title, old)
    journal = journal_holding(tmp_path / "state", ps.name, ps.api,
                              [rec for rec in fx.typed(recs) if rec.target != TARGET])
    job = BranchJob(ps, TARGET, f"test-put-metric-{TARGET}", journal, lambda step, detail: None)
    state = read_set(forge, ps, bm)
    assert not refresh_sibling_pr(job, forge, None, bm, list(ps.branches), state)
    assert forge.get_pr(pr.number).body == old
    # The host whose journal has that branch writes it, record line and all.
    knowing = journal_holding(tmp_path / "other-host", ps.name, ps.api, fx.typed(recs))
    job = dataclasses.replace(job, journal=knowing)
    assert refresh_sibling_pr(job, forge, None, bm, list(ps.branches), state)
    assert forge.get_pr(pr.number).body == body
