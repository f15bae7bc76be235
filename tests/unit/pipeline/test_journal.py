"""The journal: updates persist and reload, a corrupt journal is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.pipeline.journal import Journal
from backport.records import BranchRecord


def _applied(rec: BranchRecord) -> BranchRecord:
    return rec.applied("b" * 40, "abc", "/wt", (), series_source=None, tried_sources=(),
                       merged_files=(), loose_files=())


def test_updates_persist_and_reload(tmp_path: Path) -> None:
    journal = Journal.load(tmp_path, "put_metric", "torch.x")
    journal.record("v2.7.1", "test-put-metric-v2.7.1")
    journal.change("v2.7.1", _applied)
    again = Journal.load(tmp_path, "put_metric", "torch.x")
    assert again.get("v2.7.1").status == "applied"
    assert again.get("v2.7.1").commit == "abc"
    assert not list(journal.path.parent.glob(".journal.json.*"))


def test_a_corrupt_journal_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "put_metric" / "journal.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(BackportError) as err:
        Journal.load(tmp_path, "put_metric", "torch.x")
    assert "journal.json" in err.value.message




def test_a_save_encodes_only_the_records_that_changed(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from backport.pipeline import journal as journal_module
    encoded: list[str] = []

    def counting(rec: BranchRecord):
        encoded.append(rec.target)
        return real(rec)
    real = journal_module.encode
    monkeypatch.setattr(journal_module, "encode", counting)
    journal = Journal.load(tmp_path, "put_metric", "torch.x")
    for target in ("v2.7.1", "v2.11.0", "master"):
        journal.record(target, f"test-put-metric-{target}")
    journal.change("v2.7.1", _applied)
    journal.change("master", _applied)
    assert encoded == ["v2.7.1", "v2.11.0", "master", "master"]
    again = Journal.load(tmp_path, "put_metric", "torch.x")
    assert [r.status.value for r in again.records()] == ["applied", "pending", "applied"]
    assert again.to_json() == journal.to_json()
