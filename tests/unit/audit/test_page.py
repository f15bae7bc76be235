"""The audit's page, parsed: one row per change, a column per branch, links, counts, inert text."""

from __future__ import annotations

from html.parser import HTMLParser

from backport.audit.model import Audit, Cell, Change
from backport.audit.page import render_html, summary_lines

HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)> "q" &amp; \x1b[31m'


class Page(HTMLParser):
    """Tables (id -> rows of cell texts), links, cell classes, scripts and external sources."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.classes: dict[str, list[list[str]]] = {}
        self.links: list[str] = []
        self.scripts = 0
        self.sources: list[str] = []
        self._table = ""
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._table = found.get("id") or ""
            self.tables[self._table], self.classes[self._table] = [], []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
            self.classes[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
            self.classes[self._table][-1].append(found.get("class") or "")
        elif tag == "a":
            self.links.append(found.get("href") or "")
        elif tag == "script":
            self.scripts += 1
            if found.get("src"):
                self.sources.append(found["src"] or "")
        elif tag in ("img", "link", "iframe"):
            self.sources.append(found.get("src") or found.get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def audit() -> Audit:
    a = Change("master", "a" * 40, 41, HOSTILE, "2026-03-01T00:00:00Z", "li")
    a.on.update({"v2.7.1": Cell("landed", commit="b" * 40), "v2.11.0": Cell("missing",
                 applies=True), "v2.12.0": Cell("branch-missing")})
    b = Change("v2.7.1", "c" * 40, None, "fix: b", "2026-03-02T00:00:00Z", "wang")
    b.on.update({"master": Cell("proposed", pr=77), "v2.11.0": Cell("ignored"),
                 "v2.12.0": Cell("branch-missing")})
    return Audit("2026-01-01", ("v2.7.1", "v2.11.0", "v2.12.0", "master"), (a, b),
                 missing_branches={"v2.12.0": "not a branch of /x.git"}, prs_unread="offline")


def test_the_page_has_a_row_per_change_a_column_per_branch_and_links() -> None:
    page = Page()
    page.feed(render_html(audit(), "https://gitcode.com/", "Ascend/pytorch"))
    rows = page.tables["changes"]
    assert rows[0] == ["branch", "commit", "PR", "title", "date", "author", "v2.7.1", "v2.11.0",
                       "v2.12.0", "master"]
    assert len(rows) == 3
    first, second = rows[1], rows[2]
    assert first[0] == "master" and first[2] == "!41" and first[4] == "2026-03-01"
    assert first[6] == f"landed {'b' * 9}" and first[7] == "missing (applies)"
    assert first[8] == "not a branch of /x.git" and first[9] == "(its branch)"
    assert second[9] == "proposed !77" and second[7] == "ignored"
    assert page.classes["changes"][1][6:8] == ["s-landed", "s-missing"]
    root = "https://gitcode.com/Ascend/pytorch"
    assert f"{root}/commit/{'b' * 40}" in page.links
    assert f"{root}/commit/{'a' * 40}" in page.links
    assert f"{root}/pull/41" in page.links and f"{root}/pull/77" in page.links
    assert all(link.startswith(root) for link in page.links)


def test_the_counts_at_the_top_match_the_cells() -> None:
    page = Page()
    page.feed(render_html(audit(), "https://gitcode.com", "Ascend/pytorch"))
    counts = page.tables["counts"]
    header = counts[0]
    by_branch = {row[0]: dict(zip(header[1:], map(int, row[1:]), strict=True))
                 for row in counts[1:]}
    assert by_branch["v2.7.1"]["landed"] == 1
    assert by_branch["v2.11.0"] == {**dict.fromkeys(header[1:], 0), "missing": 1, "ignored": 1}
    assert by_branch["v2.12.0"]["branch-missing"] == 2
    assert by_branch["master"]["proposed"] == 1


def test_commit_text_is_inert_and_nothing_is_fetched() -> None:
    html = render_html(audit(), "https://gitcode.com", "Ascend/pytorch")
    page = Page()
    page.feed(html)
    assert page.scripts == 1 and page.sources == []  # the page's own script, inline
    assert "<script>alert" not in html and "<img" not in html and "\x1b" not in html
    assert page.tables["changes"][1][3].startswith("<script>alert(1)</script><img src=x")
    assert "http" not in html.replace("https://gitcode.com/Ascend/pytorch/", "")


def test_the_terminal_summary_counts_pairs_and_lists_what_applies() -> None:
    lines = summary_lines(audit())
    assert "  master -> v2.11.0: 1 missing" in lines
    assert "  v2.7.1 -> master: 1 proposed" in lines
    assert any(line.startswith("offline: the open PRs were not read") for line in lines)
    assert "v2.12.0: not a branch of /x.git" in lines
    clean = lines.index("Missing on v2.11.0 and applying cleanly (1):")
    assert lines[clean + 1].startswith(f"  {'a' * 9}     !41 master: <script>")
    assert "\x1b" not in "\n".join(lines)
