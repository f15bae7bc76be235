"""The summary comment's text: each target's line from its record, in the PR bodies' wording of
states, the lines of targets a run knows nothing of kept as another runner wrote them."""

from __future__ import annotations

import dataclasses

from backport.config import load_project
from backport.config.model import SourcePr
from backport.records import BranchRecord, PrInfo, ProposedPr
from backport.report.summary import MARKER, render_summary, rows_of
from backport.report.wording import status_zh

SOURCE = SourcePr(number=42810, base="master", commit="1292bcfa1" + "0" * 31, merged=True,
                  found_by="squash message")


def _set(sandbox):
    project = load_project(sandbox.config)
    ps = dataclasses.replace(project.patch_sets["put_metric"], source=SOURCE,
                             branches=("v2.7.1", "v2.11.0", "v2.12.0"))
    return ps, project.branch_map


def test_each_state_reads_as_the_bodies_word_it_and_other_lines_are_kept(sandbox):
    ps, bm = _set(sandbox)
    proposed = BranchRecord("v2.7.1", "test-put-metric-v2.7.1").already_proposed(
        ProposedPr(number=7, url="https://gitcode.com/Ascend/pytorch/pull/7", state="open",
                   kind="sync"), "carried by !7")
    done = BranchRecord("v2.12.0", "test-put-metric-v2.12.0").with_pr(
        PrInfo(number=12, url="https://gitcode.com/Ascend/pytorch/pull/12"))
    other_host = "| `v2.11.0` | 冲突 | — | 冲突：a.py | `backport apply --from-pr 42810 --branch v2.11.0` |"
    text = render_summary(ps, bm, [proposed, done], f"{MARKER}\n{other_host}\n")
    rows = rows_of(text)
    assert list(rows) == ["v2.7.1", "v2.11.0", "v2.12.0"]
    assert status_zh("already-proposed") in rows["v2.7.1"] and "[!7](" in rows["v2.7.1"]
    assert "同步机器人的 PR" in rows["v2.7.1"]
    assert rows["v2.11.0"] == other_host  # run elsewhere: its line as that runner wrote it
    assert "[!12](https://gitcode.com/Ascend/pytorch/pull/12)" in rows["v2.12.0"]
    assert text.startswith(MARKER) and "Ascend/pytorch!42810" in text
    assert "已合入 `master`（提交 `1292bcfa1000`）" in text
