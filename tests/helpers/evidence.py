"""What a test reads of a PR body's evidence: its ``KEY=value`` lines as a reviewer sees them,
and the branch record its hidden line carries (the tool reads only the latter)."""

from __future__ import annotations

import re

from backport.records import BranchRecord
from backport.report import regions as rg
from backport.report.regions import read_line

_KEY = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")


def evidence_text(body: str) -> str:
    """The evidence region's content (the fence and the record line)."""
    return rg.find_regions(body)[rg.EVIDENCE].content(body)


def evidence_fields(body: str) -> dict[str, str]:
    """The ``KEY=value`` lines of the evidence before its result section, in order."""
    fields: dict[str, str] = {}
    for line in evidence_text(body).splitlines():
        if line == "RESULT:" or line.startswith("RESULT: "):
            break
        match = _KEY.match(line)
        if match:
            fields.setdefault(match["key"], match["value"])
    after = evidence_text(body).split("\ntest_exit_code=", 1)
    if len(after) == 2:
        for line in ("test_exit_code=" + after[1]).splitlines():
            match = _KEY.match(line)
            if match:
                fields.setdefault(match["key"], match["value"])
    return fields


def shared_record(body: str, target: str, fork_branch: str | None = None) -> BranchRecord:
    """The record ``target``'s PR body carries (its fork branch as the fixtures name it)."""
    read = read_line(body, target=target, fork_branch=fork_branch or f"test-put-metric-{target}")
    assert read is not None, "the body carries no record"
    return read[0]
