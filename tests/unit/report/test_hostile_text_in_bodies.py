"""Text from outside in a PR body, the source PR's summary comment and the run report is inert:
rendered as Markdown with HTML (as GitCode does), hostile titles, test output, file names and
commit subjects add no HTML, marker, link, image, reference, heading, table cell or code fence,
and the record the body carries reads back as it was written."""

from __future__ import annotations

import copy
import dataclasses
import re

from backport.config import model
from backport.config.model import SourcePr
from backport.docs_audit import DocsEntry
from backport.report import regions as rg
from backport.report.body import render_body
from backport.report.regions import read_line
from backport.report.summary import MARKER, render_markdown, render_summary, rows_of
from backport.states import Status
from tests.helpers import report_fixtures as fx
from tests.helpers.hostile_text import EVIL_URL, HOSTILE, INVISIBLE, read

ONE_LINE = " ".join(HOSTILE)


def _hostile_records() -> list[dict]:
    recs = fx.records()
    failing = fx.failing(recs[0])
    failing["test"].update(summary_lines=list(HOSTILE), summary=ONE_LINE, command=ONE_LINE,
                           patch_tests=[["test_<img src=x>|x", "failed"]])
    failing["merged_files"] = list(HOSTILE[:4])
    failing["present"] = [{"path": "test/<b>.py", "name": "Evil.test_`x`", "line": 3,
                           "commit": "1292bcfa1", "subject": ONE_LINE}]
    failing["env"]["probe"].update(platform=ONE_LINE, cann="<img src=x onerror=alert(1)>")
    recs[0] = failing
    recs[3].update(env=None, test=None, status="conflict", conflicts=list(HOSTILE), commit=None,
                   pushed_sha=None, pr=None)
    return recs


def _benign_records() -> list[dict]:
    recs = fx.records()
    failing = fx.failing(recs[0])
    failing["test"].update(summary_lines=["plain"] * len(HOSTILE), summary="plain",
                           command="plain", patch_tests=[["test_plain", "failed"]])
    failing["merged_files"] = ["plain"] * 4
    failing["present"] = [{"path": "test/b.py", "name": "Plain.test_x", "line": 3,
                           "commit": "1292bcfa1", "subject": "plain"}]
    failing["env"]["probe"].update(platform="plain", cann="plain")
    recs[0] = failing
    recs[3].update(env=None, test=None, status="conflict", conflicts=["plain"] * len(HOSTILE),
                   commit=None, pushed_sha=None, pr=None)
    return recs


def _context(recs: list[dict], words: tuple[str, ...], title: str):
    ctx = fx.context("v2.7.1", recs=recs, title=title,
                     docs_list=[DocsEntry(version=w, path=w, listed=True, summary=w)
                                for w in words[:3]])
    paths = tuple(f"test/{w}.py" for w in words)
    ps = dataclasses.replace(ctx.patch_set, touched_paths={t: paths for t in fx.TARGETS},
                             tests=(model.TestSpec(path=paths[2], args=(words[3],)),))
    return dataclasses.replace(ctx, patch_set=ps)


def _html(html: list[str]) -> list[str]:
    """The HTML GitCode sees, each record line (its JSON differs) as one comment."""
    return [re.sub(r"^<!-- backport:record v1 \{[^<>&]*\} -->$", "<!-- backport:record -->", h)
            for h in html]


def _bodies() -> tuple[str, str]:
    hostile = render_body(_context(_hostile_records(), HOSTILE, f"test: {ONE_LINE}"))
    benign = render_body(_context(_benign_records(), ("plain",) * len(HOSTILE), "test: plain"))
    return hostile, benign


def test_a_body_with_hostile_text_renders_the_structure_of_a_plain_one() -> None:
    hostile, benign = _bodies()
    seen, expected = read(hostile), read(benign)
    # our markers and template comments, nothing else (the record line one whole comment)
    assert _html(seen.html) == _html(expected.html)
    assert seen.links == expected.links
    assert seen.live_text == expected.live_text  # no autolink, mention or #/! reference
    assert seen.rows == expected.rows  # no cell split, no extra row
    assert seen.headings == expected.headings
    assert len(seen.fences) == len(expected.fences)
    assert not any(ch in hostile for ch in INVISIBLE)
    assert [r.name for r in rg.scan(hostile)[0]] == [r.name for r in rg.scan(benign)[0]]
    assert rg.scan(hostile)[1] == []


def test_hostile_text_is_shown_as_text() -> None:
    hostile, _ = _bodies()
    # The cell of the failed branch: every line of the test's output, one cell, escaped.
    row = next(line for line in hostile.splitlines() if line.startswith("| v2.7.1 | ")
               and "退出码" in line)
    assert ("&lt;!-- backport:evidence:end --&gt;，&lt;!-- api-validation-evidence:end --&gt; "
            "&lt;!-- backport:validation:start --&gt;，&lt;img src=x onerror=alert(1)&gt;，"
            f"\\[x\\](`{EVIL_URL})`，!\\[\\](`{EVIL_URL})`，see `{EVIL_URL}` and "
            "`www.evil.example` now，a\\|b，two lines # heading，\\`tick\\` and \\`\\`\\` fence，"
            "\\`\\`\\`，~~~，`@mention`，`#123` and Ascend/pytorch`#7`，`!123`，"
            "&amp;lt;b&amp;gt; &amp;#60;i&amp;#62; &amp;amp;，zero\ufffdwidth\ufffd，"
            "bidi\ufffdevil\ufffd\ufffdx\ufffd，&gt; quote，test_exit_code=0，"
            "RESULT: not run (done)，TIMED OUT after 1s，HEAD_COMMIT=" + "0" * 40 +
            "，back\\slash \\\\&lt;b\\\\&gt;，退出码 1") in row
    # The title as one code span, its fence longer than any backtick run in it.
    assert "- 补丁：````test: <! -- backport:evidence:end -- > <! -- api-validation-evidence" in hostile
    # The evidence shows the output as code lines that end no fence and hold no marker.
    evidence = rg.find_regions(hostile)[rg.EVIDENCE].content(hostile)
    assert "\n<! -- backport:evidence:end -- >\n" in evidence
    assert "\n` ` `\n" in evidence and "\n`tick` and ` ` ` fence\n" in evidence
    assert "\n> test_exit_code=0\n> RESULT: not run (done)\n> TIMED OUT after 1s\n" in evidence


def test_a_record_with_hostile_output_reads_back_as_written() -> None:
    hostile, _ = _bodies()
    read = read_line(hostile, target="v2.7.1", fork_branch="test-put-metric-v2.7.1")
    assert read is not None
    record = read[0]
    assert record.status == Status.TEST_FAILED
    assert record.test is not None
    assert record.test.exit_code == 1 and record.test.timed_out is False
    assert record.test.summary_lines == HOSTILE
    assert record.head == fx.SHAS["v2.7.1"][::-1] + "1" * 31  # not the one in the output


def test_a_refreshed_body_with_hostile_text_keeps_its_regions() -> None:
    hostile, benign = _bodies()
    again = render_body(_context(_hostile_records(), HOSTILE, f"test: {ONE_LINE}"), hostile)
    assert again == hostile
    assert read(render_body(_context(_benign_records(), ("plain",) * len(HOSTILE), "test: plain"),
                            hostile)).rows == read(benign).rows


def test_the_summary_comment_with_hostile_text_keeps_one_row_per_target() -> None:
    recs = fx.typed(_hostile_records())
    ps = dataclasses.replace(fx.patch_set(), source=SourcePr(
        number=42810, base="master<img src=x>", commit="1292bcfa1" + "0" * 31, merged=True,
        found_by="squash message"))
    text = render_summary(ps, fx.branch_map(), recs)
    seen = read(text)
    ours = [rec.pr.url for rec in recs if rec.pr is not None]  # the branches' own PRs
    assert seen.html == [MARKER] and seen.links == ours and seen.live_text == []
    assert seen.rows == [5] * 5
    assert list(rows_of(text)) == list(fx.TARGETS)
    assert "本 PR 已合入 `master<img src=x>`（提交 `1292bcfa1000`）" in text
    row = rows_of(text)["master"]
    assert row.startswith("| `master` | 补丁未能自动应用 | — | 冲突：&lt;!-- backport:evidence:end --&gt;、")
    assert row.endswith("`backport apply --from-pr 42810 --branch master` |")
    # A later run keeps a hostile row as written: still one row per target, nothing new.
    kept = render_summary(ps, fx.branch_map(), [], text)
    assert read(kept).rows == [5] * 5 and read(kept).html == [MARKER]


def test_the_run_report_with_hostile_text_is_inert() -> None:
    recs = copy.deepcopy(_hostile_records())
    recs[1]["message"] = ONE_LINE
    recs[1]["warnings"] = [ONE_LINE]
    recs[2]["fork_branch"] = "a|b<img src=x>"
    report = render_markdown("put_metric", fx.typed(recs))
    seen = read(report)
    ours = [rec["pr"]["url"] for rec in recs if rec["pr"]]
    assert seen.html == [] and seen.links == ours and seen.live_text == []
    assert seen.rows == [6] * 5
    assert seen.headings == ["backport report: put_metric", "Messages", "Test logs"]
