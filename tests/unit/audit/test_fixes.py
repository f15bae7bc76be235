"""One fix, one row: changes on several branches that are the same fix are grouped; the fix's
state on a branch and the change to take there come from the nearest release branch."""

from __future__ import annotations

from backport.audit.model import (
    BY_CARRIER,
    BY_CONTENT,
    BY_TESTS,
    BY_TITLE,
    Audit,
    Cell,
    Change,
)
from backport.audit.page import from_pr_arguments, render_html, summary_lines

BRANCHES = ("v2.7.1", "v2.11.0", "v2.12.0", "master")


def one(branch: str, n: int, date: str, on: dict[str, Cell]) -> Change:
    c = Change(branch, f"{n:040x}", n, f"fix {n}", date, "a")
    c.on.update(on)
    return c


def three_branches() -> Audit:
    """!100 on master, carried to v2.12.0 (!201) and v2.11.0 (!202), missing on v2.7.1."""
    m, v12, v11 = f"{100:040x}", f"{201:040x}", f"{202:040x}"
    return Audit("2026-01-01", BRANCHES, (
        one("master", 100, "2026-01-02", {
            "v2.12.0": Cell("landed", commit=v12, why=BY_CARRIER),
            "v2.11.0": Cell("landed", commit=v11, why=BY_CARRIER),
            "v2.7.1": Cell("missing", applies=False)}),
        one("v2.12.0", 201, "2026-01-03", {
            "master": Cell("landed", commit=m, why=BY_CARRIER),
            "v2.11.0": Cell("landed", commit=v11, why=BY_TITLE),
            "v2.7.1": Cell("missing", applies=True)}),
        one("v2.11.0", 202, "2026-01-04", {
            "master": Cell("landed", commit=m, why=BY_CARRIER),
            "v2.12.0": Cell("missing", applies=True),  # the rules missed it; the fix is there
            "v2.7.1": Cell("missing", applies=True)}),
        one("master", 300, "2026-01-05", {"v2.7.1": Cell("missing", applies=True),
                                          "v2.11.0": Cell("not-needed"),
                                          "v2.12.0": Cell("not-needed")})))


def test_a_fix_on_three_branches_is_one_row_and_named_once() -> None:
    audit = three_branches()
    assert len(audit.fixes) == 2
    fix = next(f for f in audit.fixes if len(f.members) == 3)
    assert (fix.first.branch, fix.first.commit) == ("master", f"{100:040x}")
    # its state on v2.12.0 is landed (merged there), though one member says missing
    assert fix.pick("v2.12.0")[1].state == "landed"
    # the change to take onto v2.7.1: the nearest release branch's that applies
    assert fix.pick("v2.7.1")[0].pr == 202
    assert from_pr_arguments(audit, "v2.7.1") == ["--from-pr 202", "--from-pr 300"]
    assert from_pr_arguments(audit, "v2.12.0") == []
    lines = summary_lines(audit)
    assert "Missing on v2.7.1 and applying cleanly (2):" in lines
    assert sum("!202" in line or "!201" in line or "!100" in line for line in lines) == 1
    assert "  master -> v2.7.1: 2 missing" in lines
    assert "  master -> v2.11.0: 1 landed, 1 not-needed" in lines


def test_the_json_keeps_every_commit_and_names_its_fix() -> None:
    data = three_branches().to_json()
    assert len(data["changes"]) == 4
    assert {c["fix"] for c in data["changes"][:3]} == {f"{100:040x}"}
    assert data["changes"][3]["fix"] == f"{300:040x}"
    assert data["changes"][0]["on"]["v2.12.0"] == {
        "state": "landed", "commit": f"{201:040x}", "why": "carries the change"}


def test_a_test_already_there_does_not_join_two_changes() -> None:
    a = one("master", 1, "2026-01-02", {"v2.7.1": Cell("landed", commit=f"{2:040x}",
                                                         why=BY_TESTS)})
    b = one("v2.7.1", 2, "2026-01-03", {"master": Cell("landed", commit=f"{9:040x}",
                                                        why=BY_CONTENT)})
    assert len(Audit("2026-01-01", ("v2.7.1", "master"), (a, b)).fixes) == 2


def test_the_page_has_one_row_per_fix_and_the_rule_in_the_tooltip() -> None:
    page = render_html(three_branches(), "https://gitcode.com", "Ascend/pytorch")
    assert page.count("<tr data-text=") == 2
    assert '<span id="shown">2</span>' in page
    assert f'title="carries the change: {201:040x}"' in page
    assert "also v2.12.0" in page and "also v2.11.0" in page


def test_a_fix_inside_a_larger_change_is_landed_but_not_that_change() -> None:
    # two small fixes of v2.7.1 found (content rule) inside one large sync on master
    big = f"{9:040x}"
    small = [one("v2.7.1", n, f"2026-01-0{n}", {"master": Cell("landed", commit=big,
                                                                why=BY_CONTENT)})
             for n in (1, 2)]
    large = one("master", 9, "2026-01-09", {"v2.7.1": Cell("missing", applies=False)})
    audit = Audit("2026-01-01", ("v2.7.1", "master"), (*small, large))
    assert len(audit.fixes) == 3
    assert all(f.pick("master")[1].state == "landed" for f in audit.fixes
               if f.first.branch == "v2.7.1")
