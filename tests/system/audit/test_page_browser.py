"""The audit's page in a real browser (Debian's headless Chromium over the DevTools protocol):
the branch and state filters and the search change the rows shown and the count; 2,500 rows
render in at most 2 s (timed inside the page); the page fetches nothing (issue 48 item 8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backport.audit.model import BY_CARRIER, Audit, Cell, Change
from backport.audit.page import render_html

from .conftest import PACKAGE, browser, executable

pytestmark = pytest.mark.skipif(executable() is None,
                                reason=f"needs Debian's {PACKAGE} package (apt-get install "
                                       f"{PACKAGE}; scripts/setup.sh installs it as root)")

BRANCHES = ("v2.7.1", "v2.12.0", "master")
# The 2 s, timed inside the page (not the browser's start), on a machine whose cores are
# not all busy; stretched by how many times over its cores the machine is loaded (the test runs
# beside others: at load 6 on 2 cores, 6 s).
def render_bound() -> float:
    return 2.0 * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
VISIBLE = "[...document.querySelectorAll('#changes tbody tr')].filter(r => !r.hidden).length"


def change(n: int, branch: str, on: dict[str, Cell], title: str = "") -> Change:
    c = Change(branch, f"{n:040x}", 1000 + n, title or f"fix number {n}", "2026-06-02T00:00:00Z",
               "Li")
    c.on.update(on)
    return c


def small() -> Audit:
    """Four fixes: one on two branches (one row), the others each in a known state."""
    m = change(1, "master", {"v2.12.0": Cell("landed", commit=f"{2:040x}", why=BY_CARRIER),
                             "v2.7.1": Cell("missing", applies=True)}, "fix the cann check")
    synced = change(2, "v2.12.0", {"master": Cell("landed", commit=f"{1:040x}", why=BY_CARRIER),
                                   "v2.7.1": Cell("missing", applies=True)})
    return Audit("2026-06-01", BRANCHES, (
        m, synced,
        change(3, "master", {"v2.12.0": Cell("missing", applies=False),
                             "v2.7.1": Cell("not-needed")}, "add inductor k"),
        change(4, "v2.7.1", {"v2.12.0": Cell("proposed", pr=77),
                             "master": Cell("missing", applies=True)}, "fix dump on 2.7"),
        change(5, "master", {"v2.12.0": Cell("ignored"), "v2.7.1": Cell("ignored")},
               "Update op_plugin commit id")))


def large(rows: int) -> Audit:
    states = [Cell("landed", commit="a" * 40, why=BY_CARRIER), Cell("missing", applies=True),
              Cell("missing", applies=False), Cell("not-needed"), Cell("proposed", pr=9)]
    return Audit("2026-06-01", BRANCHES, tuple(
        change(n, BRANCHES[n % 3], {b: states[(n + i) % len(states)]
                                    for i, b in enumerate(BRANCHES) if b != BRANCHES[n % 3]})
        for n in range(rows)))


def write(audit: Audit, path: Path) -> str:
    path.write_text(render_html(audit, "https://gitcode.com", "Ascend/pytorch"),
                    encoding="utf-8")
    return path.as_uri()


def pick(select: str, value: str) -> str:
    return (f"(() => {{const s = document.getElementById('{select}'); s.value = {value!r}; "
            f"s.dispatchEvent(new Event('input')); return [{VISIBLE}, "
            f"Number(document.getElementById('shown').textContent)];}})()")


def test_the_filters_and_the_search_change_the_rows_and_the_count(tmp_path: Path) -> None:
    url = write(small(), tmp_path / "audit.html")
    with browser(tmp_path / "profile") as page:
        page.open(url)
        assert page.evaluate(f"[{VISIBLE}, Number(document.getElementById('shown')"
                             ".textContent)]") == [4, 4]  # one row per fix
        assert page.evaluate(pick("fs", "missing")) == [3, 3]
        assert page.evaluate(pick("fb", "v2.7.1")) == [1, 1]  # missing on v2.7.1: the one fix
        assert page.evaluate(pick("fs", "not-needed")) == [1, 1]
        assert page.evaluate(pick("fs", "")) == [3, 3]  # any state on v2.7.1: not its own fix
        assert page.evaluate(pick("fb", "")) == [4, 4]
        assert page.evaluate(pick("ft", "CANN")) == [1, 1]  # search, any case
        assert page.evaluate(pick("ft", "!1002")) == [1, 1]  # the other branch's PR: same row
        assert page.evaluate(pick("ft", "no such fix")) == [0, 0]
        assert page.evaluate(pick("ft", "")) == [4, 4]
        tip = page.evaluate("document.querySelector('td.s-landed a').title")
        assert tip == f"carries the change: {2:040x}"
        assert all(u.startswith("file://") for u in page.requests), page.requests


def test_2500_rows_render_within_the_bound_and_nothing_is_fetched(tmp_path: Path) -> None:
    url = write(large(2500), tmp_path / "audit.html")
    bound = render_bound()
    with browser(tmp_path / "profile") as page:
        page.open(url)
        # from the navigation's start to the first frame after the page loaded
        took = page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame("
                             "() => r(performance.now() / 1000))))")
        assert page.evaluate(VISIBLE) == 2500
        assert took <= bound, f"2,500 rows took {took:.2f} s to render"
        filtered = page.evaluate(
            "(() => {const t = performance.now(); const s = document.getElementById('fs');"
            "s.value = 'missing'; s.dispatchEvent(new Event('input'));"
            "document.body.offsetHeight; return (performance.now() - t) / 1000;})()")
        assert 0 < page.evaluate(VISIBLE) < 2500
        assert filtered <= bound, f"filtering 2,500 rows took {filtered:.2f} s"
        fetched = page.evaluate("performance.getEntriesByType('resource').length")
        assert fetched == 0 and page.requests == [url], page.requests
