"""A re-run whose journal names commits the cache repository no longer holds applies again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.project import rev
from tests.helpers.runs import TARGETS, apply, statuses


def test_a_rerun_with_another_cache_applies_again_and_pushes(
        sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = apply(sandbox, skip_tests=True, no_push=True)
    assert set(statuses(first).values()) == {"tested"}
    monkeypatch.setenv("BACKPORT_CACHE", str(tmp_path / "another-cache"))

    second, events = apply(sandbox, skip_tests=True)

    assert statuses(second) == {t: "done" for t in TARGETS}, [r.message for r in second.records]
    for record in second.records:
        assert rev(sandbox.fork, f"refs/heads/test-put-metric-{record.target}") == record.commit
        said = " ".join(events.said(record.target, "apply"))
        assert "not in this run's cache repository" in said, said
        assert "kept" not in said
