"""In-process `apply` runs of the put_metric set on the demo's sandbox, and what they left."""

from __future__ import annotations

import os
import sqlite3

from backport.config import load_project
from backport.config.model import Project
from backport.demo.sandbox import Sandbox
from backport.pipeline.run import run_apply
from backport.pipeline.session import ApplyOptions, RunMode, SetRun

TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
NAME = "put_metric"


class Events:
    """The progress sink: every (target, step, detail) a run reported."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, target: str, step: str, detail: str = "") -> None:
        self.seen.append((target, step, detail))

    def steps(self, target: str) -> list[str]:
        return [step for t, step, _ in self.seen if t == target]

    def said(self, target: str, step: str) -> list[str]:
        return [detail for t, s, detail in self.seen if t == target and s == step]


def project_of(sandbox: Sandbox) -> Project:
    return load_project(sandbox.config, None, os.environ)


FLAGS = ("dry_run", "no_push", "no_pr")  # the flags of how far `apply` goes (`RunMode.of_flags`)


def apply(sandbox: Sandbox, **options) -> tuple[SetRun, Events]:
    """One in-process `apply --api put_metric` with these options (``dry_run``, ``no_push``
    and ``no_pr`` spelled as the command's flags)."""
    events = Events()
    flags = {flag: options.pop(flag) for flag in FLAGS if flag in options}
    (outcome,) = run_apply(project_of(sandbox), [NAME],
                           ApplyOptions(mode=RunMode.of_flags(**flags), **options), events)
    return outcome, events


def statuses(outcome: SetRun) -> dict[str, str]:
    return {r.target: r.status.value for r in outcome.records}


def prs(sandbox: Sandbox) -> list[tuple]:
    with sqlite3.connect(sandbox.project / ".backport" / "forge.sqlite") as db:
        return db.execute("SELECT number, base, body, draft FROM prs ORDER BY number").fetchall()
