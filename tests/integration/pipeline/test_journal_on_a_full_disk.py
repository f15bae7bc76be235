"""The journal survives a failed write: on a full disk the previous journal stays whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from backport.pipeline.journal import Journal
from backport.records import BranchRecord


def _applied(rec: BranchRecord) -> BranchRecord:
    return rec.applied("b" * 40, "abc", "/wt", (), series_source=None, tried_sources=(),
                       merged_files=(), loose_files=())


def test_a_full_disk_leaves_the_previous_journal_intact(tmp_path: Path) -> None:
    journal = Journal.load(tmp_path, "put_metric", "torch.x")
    journal.record("v2.7.1", "test-put-metric-v2.7.1")
    journal.change("v2.7.1", _applied)
    before = journal.path.read_text()
    # A child process whose file-size limit is below the new journal's size: writes fail as
    # they would on a full disk, half-way through the temporary file.
    script = textwrap.dedent(f"""
        import resource, signal, sys
        from pathlib import Path
        from backport.errors import BackportError
        from backport.pipeline.journal import Journal
        from backport.states import Status
        journal = Journal.load(Path({str(tmp_path)!r}), "put_metric", "torch.x")
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) + 100}, {len(before) + 100}))
        try:
            journal.change("v2.7.1", lambda rec: rec.failed(Status.FAILED, "x" * 100000, None))
        except BackportError as exc:
            print(exc.code, exc.message)
            sys.exit(3)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, env={**os.environ})
    assert proc.returncode == 3, proc.stderr
    assert "previous journal is intact" in proc.stdout
    assert journal.path.read_text() == before
    assert json.loads(before)["branches"]["v2.7.1"]["commit"] == "abc"
    assert not list(journal.path.parent.glob(".journal.json.*"))
