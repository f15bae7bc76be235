"""Each PR body carries its branch's record as one hidden JSON line; the other hosts read that,
never the evidence text a reviewer may edit, and a line that is no sound record is ignored."""

from __future__ import annotations

import copy
import dataclasses
import json
import re

import pytest

from backport.codec import encode
from backport.forge.base import PullRequest
from backport.pipeline.pr_step import SetOnForge, body_context, body_records
from backport.records import BranchRecord
from backport.report import regions as rg
from backport.report.body import render_body
from backport.report.regions import read_line, record_line
from tests.helpers import report_fixtures as fx

SIBLING = "v2.11.0"
FORK_BRANCH = f"test-put-metric-{SIBLING}"


def _record(recs: list[dict], target: str) -> BranchRecord:
    return next(rec for rec in fx.typed(recs) if rec.target == target)


def _read(body: str) -> BranchRecord | None:
    """The record the sibling's body carries, as another host reads it."""
    read = read_line(body, target=SIBLING, fork_branch=FORK_BRANCH)
    return read[0] if read else None


def _evidence(body: str) -> str:
    return rg.find_regions(body)[rg.EVIDENCE].content(body)


def _with_evidence(body: str, content: str) -> str:
    region = rg.find_regions(body)[rg.EVIDENCE]
    return body[:region.inner_start] + content + body[region.inner_end:]


def _line(body: str) -> str:
    (line,) = [ln for ln in _evidence(body).splitlines() if ln.startswith("<!-- backport:record")]
    return line


def test_a_reviewer_editing_the_evidence_text_changes_no_record() -> None:
    recs = fx.records()
    body = render_body(fx.context(SIBLING, recs=recs))
    edited = _with_evidence(body, _evidence(body)
                            .replace("test_exit_code=0", "test_exit_code=1")
                            .replace("\nOK\n", "\nFAILED (failures=3)\n")
                            .replace("TORCH=2.11.0+cu130", "TORCH=9.9.9")
                            .replace("HEAD_COMMIT=", "HEAD_COMMIT=0000000"))
    assert edited != body
    line = read_line(edited, target=SIBLING, fork_branch=FORK_BRANCH)
    assert line is not None and line[0] == _record(recs, SIBLING).published()
    assert line[0].test is not None and line[0].test.ok is True


def _tampered(line: str) -> list[str]:
    data = json.loads(line.removeprefix("<!-- backport:record v1 ").removesuffix(" -->"))

    def variant(**changes: object) -> str:
        return "<!-- backport:record v1 " + json.dumps({**data, **changes}) + " -->"

    test = dict(data["test"])
    return [
        line.replace("v1 ", "v2 "),  # a version this one does not read
        line.replace("v1 ", "v0 "),
        line.replace('"status":"done"', '"status":"bogus"'),
        line[:-10] + " -->",  # cut short
        line.replace('{"target"', '{"target":1,"x"'),
        variant(test=["not", "an", "object"]),
        variant(target="master"),  # another branch's record, copied here
        variant(fork_branch="someone-else"),
        variant(test={**test, "skip_cause": "bogus", "skipped": True}),
        variant(test={**test, "ran": "7"}),
        variant(test={**test, "ok": "yes"}),
        variant(env={"name": "x", "probe": {"env_name": "x"}}),
        line.replace('"duration":1.23', '"duration":NaN'),
        line.replace('"ran":7', '"ran":' + "9" * 5000),
        "<!-- backport:record v1 {\"a\":" + "[" * 100_000 + "]" * 100_000 + "} -->",
        "<!-- backport:record v1 {} -->",
        "<!-- backport:record v999999999 {} -->",
        line.replace('"status":"done"', '"status":"done","status":"test-failed"'),  # twice
    ]


@pytest.mark.parametrize("index", range(18))
def test_a_tampered_record_reads_as_none_never_a_crash(index: int) -> None:
    body = render_body(fx.context(SIBLING))
    tampered = _tampered(_line(body))[index]
    changed = body.replace(_line(body), tampered)
    assert read_line(changed, target=SIBLING, fork_branch=FORK_BRANCH) is None


def test_a_record_outside_the_evidence_region_or_none_at_all_is_none() -> None:
    body = render_body(fx.context(SIBLING))
    line = _line(body)
    moved = body.replace(line + "\n", "") + "\n" + line + "\n"
    assert read_line(moved, target=SIBLING, fork_branch=FORK_BRANCH) is None
    assert read_line("", target=SIBLING, fork_branch=FORK_BRANCH) is None
    assert read_line(None, target=SIBLING, fork_branch=FORK_BRANCH) is None
    assert read_line(body.replace(line, ""), target=SIBLING, fork_branch=FORK_BRANCH) is None


HOSTILE = ["end --> here", "<!-- backport:validation:end -->", "<!-- api-validation-evidence:end -->",
           "<script>alert(1)</script>", "&lt;b&gt; &amp;", "--!>", "line\nbreak", "sep\u2028arator",
           "\u202eevil", "```", "@all #1 !2"]


def test_text_from_outside_in_a_record_cannot_end_the_comment_or_add_a_marker() -> None:
    recs = copy.deepcopy(fx.records())
    recs[1]["test"].update(summary_lines=HOSTILE, summary=" ".join(HOSTILE), command=HOSTILE[0])
    recs[1]["merged_files"] = HOSTILE[:3]
    rec = _record(recs, SIBLING)
    line = record_line(rec)
    assert line.isascii() and line.count("-->") == 1 and line.endswith(" -->")
    assert line.count("<") == 1 and ">" not in line[:-3] and "&" not in line
    assert "\n" not in line and "\r" not in line
    body = render_body(fx.context(SIBLING, recs=recs))
    plain = render_body(fx.context(SIBLING))
    assert [r.name for r in rg.scan(body)[0]] == [r.name for r in rg.scan(plain)[0]]
    assert rg.scan(body)[1] == []
    assert _read(body) == rec.published()


def test_the_record_carries_nothing_of_the_host() -> None:
    recs = copy.deepcopy(fx.records())
    recs[1].update(message="fix it in /home/dev/wt/put_metric", worktree="/home/dev/wt",
                   conflict_snapshot={"a.py": "e" * 40}, warnings=["labels refused"])
    recs[1]["env"]["probe"]["torch_npu_error"] = "/usr/local/Ascend/libhccl.so: cannot open"
    line = record_line(_record(recs, SIBLING))
    for local in ("/home/dev", "~/envs/torch-2.11.0/bin/python\"", ".backport/runs",
                  "/usr/local/Ascend", "labels refused", "e" * 40):
        assert local not in line


def _listed(target: str, body: str) -> PullRequest:
    number = 42806 + fx.TARGETS.index(target)
    return PullRequest(number=number, url=f"https://gitcode.com/Ascend/pytorch/pull/{number}",
                       title="t", body=body, head=f"test-put-metric-{target}",
                       head_repo="lgxxx/pytorch", base=target, state="open")


def test_a_sibling_moved_since_its_record_shows_as_stale_and_its_own_text_stays() -> None:
    recs = fx.records()
    for rec in recs:
        rec["test"]["commit"] = rec["pushed_sha"]  # the commit the result is of, as a run says
    sibling = _record(recs, SIBLING)
    note = "Maintainer note: rerun on an Atlas 800T A2 too."
    body = render_body(fx.context(SIBLING, recs=recs)) + "\n" + note + "\n"
    moved = "f" * 40
    state = SetOnForge(prs={SIBLING: _listed(SIBLING, body)},
                       shared={SIBLING: _read(body)},  # type: ignore[dict-item]
                       heads={SIBLING: moved})
    others = [rec for rec in fx.typed(recs) if rec.target != SIBLING]
    chosen, read_back = body_records(others, state)
    assert read_back == {SIBLING}
    shown = next(rec for rec in chosen if rec.target == SIBLING)
    assert shown.stale and shown.fork_sha == moved and shown.test == sibling.published().test
    # Another host refreshing the sibling's PR: its evidence says stale, its note stays.
    ctx = body_context(fx.patch_set(), fx.branch_map(), others, SIBLING, None, state,
                       own_from_journal=False)
    refreshed = render_body(ctx, existing=body)
    evidence = _evidence(refreshed)
    assert f"HEAD_COMMIT={moved}" in evidence and f"TESTED_COMMIT={sibling.head}" in evidence
    assert "STALE=" in evidence and refreshed.endswith(note + "\n")
    again = _read(refreshed)
    assert again is not None and again.stale and again.fork_sha == moved


def test_a_record_keeps_the_link_it_knew_of_its_own_pr() -> None:
    recs = copy.deepcopy(fx.records())
    recs[1]["pr"].update(linked=False, refused=["link"])
    body = render_body(fx.context(SIBLING, recs=recs))
    state = SetOnForge(prs={SIBLING: _listed(SIBLING, body)},
                       shared={SIBLING: _read(body)},  # type: ignore[dict-item]
                       heads={})
    chosen, _ = body_records([], state)
    assert chosen[0].pr is not None and chosen[0].pr.refused == ("link",)
    assert not chosen[0].linked


def test_the_record_line_is_the_codec_form_of_the_published_record() -> None:
    rec = dataclasses.replace(_record(fx.records(), SIBLING), message="local only")
    data = json.loads(re.sub(r"^<!-- backport:record v1 | -->$", "", record_line(rec)))
    assert data == encode(rec.published(), compact=True) and "message" not in data


def test_keys_a_later_version_wrote_stay_when_another_host_rewrites_the_pr() -> None:
    recs = fx.records()
    for rec in recs:
        rec["test"]["commit"] = rec["pushed_sha"]
    body = render_body(fx.context(SIBLING, recs=recs))
    line = _line(body)
    data = json.loads(line.removeprefix("<!-- backport:record v1 ").removesuffix(" -->"))
    data["linted"] = {"by": "a later version", "ok": True}
    data["test"]["flaky_reruns"] = 2
    later = body.replace(line, record_line(_record(recs, SIBLING), keep=data))
    assert _read(later) == _record(recs, SIBLING).published()
    moved = "f" * 40
    state = SetOnForge(prs={SIBLING: _listed(SIBLING, later)},
                       heads={SIBLING: moved}).with_pr(SIBLING, _listed(SIBLING, later))
    others = [rec for rec in fx.typed(recs) if rec.target != SIBLING]
    ctx = body_context(fx.patch_set(), fx.branch_map(), others, SIBLING, None, state,
                       own_from_journal=False)
    rewritten = json.loads(_line(render_body(ctx, existing=later))
                           .removeprefix("<!-- backport:record v1 ").removesuffix(" -->"))
    assert rewritten["linted"] == {"by": "a later version", "ok": True}
    assert rewritten["test"]["flaky_reruns"] == 2
    assert rewritten["fork_sha"] == moved  # what this host knows is written as it knows it
