"""Fixtures of the pipeline tests: the GitCode stand-in on 127.0.0.1 serving the sandbox's source
PR (the sandbox and the fake GitCode server are the root conftest's); journals holding records."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest

from backport.codec import encode
from backport.demo.sandbox import Sandbox
from backport.pipeline.journal import JOURNAL_VERSION, Journal
from backport.records import BranchRecord
from tests.helpers.source_pr import source_server


@pytest.fixture
def server(sandbox: Sandbox):
    """The stand-in GitCode server, serving the sandbox's upstream and its source PR."""
    with source_server(sandbox) as fake:
        yield fake


# Journals that already hold given records, as a journal file read back holds them.
def journal_holding(state_dir: Path, patch_set: str, api: str,
                    records: Iterable[BranchRecord]) -> Journal:
    """A journal of ``patch_set`` under ``state_dir`` holding ``records`` (no move checked:
    the file is written as a run would have left it, then loaded; it writes nothing more)."""
    path = state_dir / "runs" / patch_set / "journal.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": JOURNAL_VERSION, "patch_set": patch_set, "api": api,
                                "branches": {r.target: encode(r) for r in records}}),
                    encoding="utf-8")
    return Journal.load(state_dir, patch_set, api, persist=False)
