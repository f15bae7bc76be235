"""Another host reads each sibling from the record its PR carries: a reviewer's edit of the
evidence text changes nothing, a tampered record is no record, and `status --from-forge` and the
refresh of sibling PRs read the same."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from backport.forge.local import LocalForge
from backport.pipeline.shared_results import forge_records, read_set
from backport.report.body import render_body
from tests.report import fixtures as fx

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
