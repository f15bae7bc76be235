"""`applies` is true, false or unknown: the JSON says null with why, the page says unknown with
why as its tooltip, the warning says it once; the progress line a terminal gets."""

from __future__ import annotations

import io

from rich.console import Console

from backport.audit.model import MISSING, Audit, Cell, Change
from backport.audit.page import render_html
from backport.audit.run import unknown_warning
from backport.report.progress import PhaseProgress

WHY = "v2.7.1's blob 1234abcd0 of data/big.bin could not be read: the upstream does not have it"


def _audit(*cells: Cell) -> Audit:
    changes = tuple(Change(branch="master", commit=str(n) * 40, pr=n, title=f"fix {n}",
                           date="2026-08-01T00:00:00Z", author="Li", on={"v2.7.1": cell})
                    for n, cell in enumerate(cells, 1))
    return Audit(since="2026-06-01", branches=("v2.7.1", "master"), changes=changes)


def test_a_missing_cell_says_applies_true_false_or_null_with_why() -> None:
    assert Cell(MISSING, applies=True).to_json() == {"state": MISSING, "applies": True}
    assert Cell(MISSING, applies=False).to_json() == {"state": MISSING, "applies": False}
    assert Cell(MISSING, why=WHY).to_json() == {"state": MISSING, "applies": None, "why": WHY}
    assert Cell("not-needed").to_json() == {"state": "not-needed"}


def test_the_page_shows_unknown_with_why_and_lists_it_nowhere_as_clean() -> None:
    audit = _audit(Cell(MISSING, why=WHY + " <b>"), Cell(MISSING, applies=True))
    page = render_html(audit, "https://gitcode.com", "Ascend/pytorch")
    assert "missing (applies: unknown)" in page and "missing (applies)" in page
    assert "the upstream does not have it &lt;b&gt;" in page and " <b>" not in page
    assert [c.pr for c in audit.missing_clean("v2.7.1")] == [2]


def test_the_warning_counts_every_unknown_cell_once_and_names_one() -> None:
    audit = _audit(Cell(MISSING, why=WHY), Cell(MISSING, why="other"),
                   Cell(MISSING, applies=False))
    warning = unknown_warning(audit)
    assert warning.startswith("whether 2 missing change(s) apply is not known")
    assert warning.endswith(f"{'1' * 9} on v2.7.1: {WHY}")
    assert unknown_warning(_audit(Cell(MISSING, applies=True))) == ""


def test_progress_is_silent_off_a_terminal_and_counts_on_one() -> None:
    piped = io.StringIO()
    with PhaseProgress(Console(file=piped)) as progress:
        progress.phase("deciding", 6070)
        progress.add(200)
    assert piped.getvalue() == ""
    shown = io.StringIO()
    with PhaseProgress(Console(file=shown, force_terminal=True, width=80)) as progress:
        progress.phase("deciding", 6070)
        progress.add(200)
        progress.bar.refresh()
        assert "audit: deciding 200/6,070 0:00:00" in shown.getvalue()
        progress.phase("fetching the branches")
        progress.bar.refresh()
    assert "audit: fetching the branches 0:00:00" in shown.getvalue()
