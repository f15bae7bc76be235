"""A branch's flow: a step's error stops its branch only, with a redacted sentence."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from backport.demo.sandbox import Sandbox
from backport.pipeline.journal import Journal
from backport.pipeline.run import Step, always, guarded
from backport.pipeline.session import BranchJob, SetRun
from backport.redact import register_secret
from tests.helpers.runs import Events, project_of

SECRET = "gc-flow-secret-7d1e"


def _job(sandbox: Sandbox, tmp_path: Path) -> BranchJob:
    patch_set = project_of(sandbox).patch_sets["put_metric"]
    journal = Journal.load(tmp_path, "put_metric", patch_set.api)
    journal.record("v2.7.1", "fb")
    return BranchJob(patch_set, "v2.7.1", "fb", journal, functools.partial(Events().event, "v2.7.1"))


def _crash(run: SetRun, job: BranchJob) -> bool:
    raise ValueError(f"cannot open https://bot:{SECRET}@gitcode.com/x.git?access_token={SECRET}")


def test_an_internal_error_reaches_the_journal_redacted(sandbox: Sandbox, tmp_path: Path) -> None:
    register_secret(SECRET)
    job = _job(sandbox, tmp_path)
    run: Any = None  # the crashing step reads nothing of the run
    assert guarded(run, job, Step("crash", always, _crash)) is False
    rec = job.record
    assert rec.status == "failed" and rec.error_code == "internal"
    assert rec.message.startswith("internal error on v2.7.1: ValueError: cannot open https://")
    assert SECRET not in rec.message and SECRET not in job.journal.path.read_text()
