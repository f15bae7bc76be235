"""Region parsing and replacement, including property tests for refresh."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backport.report import regions as rg
from backport.report.body import render_body
from tests.helpers import report_fixtures as fx

DOC = (
    "intro\n"
    "<!-- backport:a:start -->\nold a\n<!-- backport:a:end -->\n"
    "middle\n"
    "<!-- api-validation-evidence:start -->\nold evidence\n<!-- api-validation-evidence:end -->\n"
    "outro\n"
)


def count_evidence(text: str) -> int:
    """How many complete evidence blocks ``text`` holds."""
    return sum(1 for r in rg.scan(text)[0] if r.name == rg.EVIDENCE)


def outside(text: str) -> str:
    """``text`` with every region's content removed (markers kept)."""
    pieces, last = [], 0
    for region in rg.scan(text)[0]:
        if region.start < last:
            continue
        pieces.append(text[last:region.inner_start])
        last = region.inner_end
    pieces.append(text[last:])
    return "".join(pieces)


def test_find_regions_reports_content_spans() -> None:
    found = rg.find_regions(DOC)
    assert set(found) == {"a", rg.EVIDENCE}
    assert found["a"].content(DOC) == "\nold a\n"
    assert found[rg.EVIDENCE].content(DOC) == "\nold evidence\n"
    assert count_evidence(DOC) == 1


def test_replace_region_touches_only_the_content() -> None:
    out = rg.replace_region(DOC, "a", "new a\nline 2")
    assert out == DOC.replace("old a", "new a\nline 2")
    assert rg.replace_region(out, "a", "new a\nline 2") == out


def test_a_missing_region_is_appended() -> None:
    out = rg.refresh_body(DOC, "<!-- backport:b:start -->\nbee\n<!-- backport:b:end -->\n")
    assert out.startswith(DOC)
    assert out.endswith("\n<!-- backport:b:start -->\nbee\n<!-- backport:b:end -->\n")


def test_crlf_content_follows_the_document() -> None:
    doc = DOC.replace("\n", "\r\n")
    out = rg.replace_region(doc, "a", "x\ny")
    assert "<!-- backport:a:start -->\r\nx\r\ny\r\n<!-- backport:a:end -->" in out
    assert "\n" not in out.replace("\r\n", "")


def test_orphan_start_is_missing_and_does_not_swallow_text() -> None:
    doc = DOC.replace("<!-- backport:a:end -->\n", "")
    assert "a" not in rg.find_regions(doc)
    out = rg.refresh_body(doc, "<!-- backport:a:start -->\nfresh\n<!-- backport:a:end -->\n")
    assert "middle\n" in out and "outro\n" in out and "old a\n" in out
    assert out.count("<!-- backport:a:start -->") == 1
    assert rg.find_regions(out)["a"].content(out) == "\nfresh\n"


def test_orphan_end_is_dropped() -> None:
    doc = DOC.replace("<!-- backport:a:start -->\n", "")
    out = rg.drop_orphan_markers(doc)
    assert "backport:a" not in out and "old a\nmiddle" in out


def test_ensure_single_evidence_keeps_the_first() -> None:
    doc = DOC + ("between\n<!-- api-validation-evidence:start -->\nsecond\n"
                 "<!-- api-validation-evidence:end -->\nend\n")
    assert count_evidence(doc) == 2
    out = rg.ensure_single_evidence(doc)
    assert count_evidence(out) == 1
    assert "old evidence" in out and "second" not in out
    assert out == DOC + "between\nend\n"
    assert rg.ensure_single_evidence(out) == out


def test_ensure_single_evidence_drops_orphan_evidence_markers() -> None:
    doc = DOC + "<!-- api-validation-evidence:start -->\nstale\n"
    out = rg.ensure_single_evidence(doc)
    assert out == DOC + "stale\n"
    alone = "a\n<!-- api-validation-evidence:start -->\nstale\n"
    assert rg.ensure_single_evidence(alone) == alone  # kept for restore_region


def test_restore_region_completes_a_region_at_its_orphan_start() -> None:
    doc = "a\n<!-- api-validation-evidence:start -->\nstale\nrest\n"
    out = rg.restore_region(doc, rg.EVIDENCE, "new")
    assert out == ("a\n<!-- api-validation-evidence:start -->\nnew\n"
                   "<!-- api-validation-evidence:end -->\nstale\nrest\n")
    assert rg.restore_region(DOC, "a", "x") is None


def test_insert_region_snaps_to_a_line_start() -> None:
    out = rg.insert_region("one\ntwo\n", "x", "ex", 2)
    assert out == "one\n\n<!-- backport:x:start -->\nex\n<!-- backport:x:end -->\n\ntwo\n"


_BASE = render_body(fx.context("v2.7.1", recs=[fx.failing(fx.records()[0]), *fx.records()[1:]]))
_TEXT = st.text(
    alphabet=st.characters(blacklist_characters="<\x00", blacklist_categories=("Cs",)),
    min_size=1, max_size=40,
)


def _free_positions(text: str) -> list[int]:
    spans = [(r.start, r.end) for r in rg.scan(text)[0]]
    return [i for i in range(len(text) + 1) if all(not (s < i < e) for s, e in spans)]


_POSITIONS = _free_positions(_BASE)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_POSITIONS), _TEXT), min_size=1, max_size=4),
       st.booleans())
def test_refresh_keeps_random_outside_text(inserts: list[tuple[int, str]], crlf: bool) -> None:
    base = _BASE.replace("\n", "\r\n") if crlf else _BASE
    positions = _free_positions(base) if crlf else _POSITIONS
    edited = base
    for pos, text in sorted(inserts, key=lambda item: item[0], reverse=True):
        if crlf:  # map the LF position onto the CRLF document
            pos = positions[min(_POSITIONS.index(pos), len(positions) - 1)]
        edited = edited[:pos] + text + edited[pos:]
    refreshed = render_body(fx.context("v2.7.1"), edited)
    assert outside(refreshed) == outside(edited)
    assert count_evidence(refreshed) == 1
    assert "FAILED" not in rg.find_regions(refreshed)[rg.EVIDENCE].content(refreshed)
    for text in (t for _, t in inserts):
        assert text in refreshed


def test_refresh_replaces_regions_and_puts_a_missing_one_in_its_section() -> None:
    existing = ("# 【A】\nintro\n<!-- backport:a:start -->\nold\n<!-- backport:a:end -->\n"
                "maintainer's note\n# 【B】\nmine\n")
    fresh = ("# 【A】\n<!-- backport:a:start -->\nnew\n<!-- backport:a:end -->\n"
             "<!-- backport:b:start -->\nbee\n<!-- backport:b:end -->\n# 【B】\n")
    refreshed = rg.refresh_body(existing, fresh)
    regions = rg.find_regions(refreshed)
    assert regions["a"].content(refreshed).strip() == "new"
    assert regions["b"].content(refreshed).strip() == "bee"
    assert refreshed == (
        "# 【A】\nintro\n<!-- backport:a:start -->\nnew\n<!-- backport:a:end -->\n\n"
        "<!-- backport:b:start -->\nbee\n<!-- backport:b:end -->\n\n"
        "maintainer's note\n# 【B】\nmine\n")
