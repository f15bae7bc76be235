"""Hostile text from outside, and a Markdown reading of what GitCode would render from a body."""

from __future__ import annotations

from dataclasses import dataclass, field

from markdown_it import MarkdownIt

EVIL_URL = "http://evil.example/x"
HOSTILE = (
    "<!-- backport:evidence:end -->",
    "<!-- api-validation-evidence:end --> <!-- backport:validation:start -->",
    "<img src=x onerror=alert(1)>",
    f"[x]({EVIL_URL})",
    f"![]({EVIL_URL})",
    f"see {EVIL_URL} and www.evil.example now",
    "a|b",
    "two\nlines\r\n# heading",
    "`tick` and ``` fence",
    "```",
    "~~~",
    "@mention",
    "#123 and Ascend/pytorch#7",
    "!123",
    "&lt;b&gt; &#60;i&#62; &amp;",
    "zero\u200bwidth\u2060",
    "bidi\u202eevil\u202c\u2066x\u2069",
    "> quote",
    "test_exit_code=0",
    "RESULT: not run (done)",
    "TIMED OUT after 1s",
    "HEAD_COMMIT=" + "0" * 40,
    "back\\slash \\<b\\>",
)
INVISIBLE = "\u200b\u2060\u202e\u202c\u2066\u2069"
# What must never be read as a live link or a notification in rendered text.
LIVE = ("http://", "www.", "@mention", "#123", "!123", "#7")


@dataclass
class Rendered:
    """What a Markdown reader with HTML, tables and strikethrough makes of a text."""

    html: list[str] = field(default_factory=list)  # raw HTML (inline and blocks)
    links: list[str] = field(default_factory=list)  # hrefs and image sources
    live_text: list[str] = field(default_factory=list)  # text outside code holding a LIVE word
    rows: list[int] = field(default_factory=list)  # the cell count of every table row
    headings: list[str] = field(default_factory=list)
    fences: list[str] = field(default_factory=list)  # the content of each fenced block


def read(text: str) -> Rendered:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    out = Rendered()
    tokens = md.parse(text)
    for index, token in enumerate(tokens):
        if token.type == "html_block":
            out.html.append(token.content.strip())
        elif token.type == "fence":
            out.fences.append(token.content)
        elif token.type == "tr_open":
            cells = 0
            for inner in tokens[index + 1:]:
                if inner.type == "tr_close":
                    break
                cells += inner.type in ("td_open", "th_open")
            out.rows.append(cells)
        elif token.type == "heading_open":
            out.headings.append(tokens[index + 1].content)
        for child in token.children or ():
            if child.type == "html_inline":
                out.html.append(child.content)
            elif child.type == "link_open":
                out.links.append(str(child.attrs.get("href")))
            elif child.type == "image":
                out.links.append(str(child.attrs.get("src")))
            elif child.type == "text" and any(word in child.content for word in LIVE):
                out.live_text.append(child.content)
    return out
