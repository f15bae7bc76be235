"""Text from outside (titles, test output, file, branch and test names, subjects, comments)
written so that it shows as itself and does nothing where a PR body, comment, evidence line or
run report shows it: no HTML, marker, link, reference or mention, new line, table cell of its
own, end of its code block, nor invisible or bidirectional character. GitCode renders Markdown
with HTML, autolinks and ``@``/``#``/``!`` references. Ordinary text is unchanged, and a
``code`` line written again does not grow. The place decides how (``where``): ``prose`` (a
sentence), ``cell`` (a table cell), ``code`` (a line of a fenced block), ``span`` (an inline
code span, backticks included), ``cell-span`` (a code span in a table cell); the body template's
``untrusted`` filter calls it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

Where = Literal["prose", "cell", "code", "span", "cell-span"]

REPLACEMENT = "\ufffd"  # what an invisible or control character is shown as

# Characters that change how text reads without being seen: zero-width, joiners, bidi controls.
_INVISIBLE = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069"
    "\u206a\u206b\u206c\u206d\u206e\u206f\u3164\ufeff\uffa0"
)

# Words GitCode would turn into a link or a notification: URLs and www. (autolinks), mail and
# chat schemes, @mentions, #issue / !PR references (also owner/repo#N), e-mail addresses.
_LIVE = re.compile(
    r"(?i:[a-z][a-z0-9+.-]*://|www\.|mailto:|xmpp:)[^\s`|<>\\]*"
    r"|[^\s`|<>\\@]*@[^\s`|<>\\]+"
    r"|(?<!&)[#!][^\s`|<>\\]*\d[^\s`|<>\\]*"
)
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")  # an ampersand that would start an entity
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_FENCE_RUN = re.compile(r"`{3,}|~{3,}")
_ESCAPES = {"<": "&lt;", ">": "&gt;", "`": "\\`", "[": "\\[", "]": "\\]", "|": "\\|"}


def _visible(text: str) -> str:
    """One line: whitespace runs are one space, invisible and control characters shown as U+FFFD."""
    text = str(text)
    if text.isascii() and text.isprintable():  # no control, invisible or other space in it
        return " ".join(text.split())
    hidden = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
    shown = (" " if ch.isspace() else
             REPLACEMENT if ch in _INVISIBLE or unicodedata.category(ch) in hidden else ch
             for ch in text)
    return " ".join("".join(shown).split())


def _no_markers(text: str) -> str:
    """HTML comment openers and closers broken (``<! --``, ``-- >``): shown, never parsed."""
    while "<!--" in text or "-->" in text:
        text = text.replace("<!--", "<! --").replace("-->", "-- >")
    return text


def _escaped(text: str, *, cell: bool) -> str:
    """Markdown text with nothing active in it (no references, HTML, links, backticks)."""
    pieces: list[str] = []
    last = 0
    for match in _LIVE.finditer(text):
        pieces.append(_plain(text[last:match.start()], cell=cell))
        pieces.append(_span(match.group(), cell=cell))
        last = match.end()
    pieces.append(_plain(text[last:], cell=cell))
    return "".join(pieces)


def _plain(text: str, *, cell: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch == "\\":
            following = text[index + 1:index + 2]
            out.append("\\\\" if following and following in _PUNCT else "\\")
        elif ch == "&" and _ENTITY.match(text, index):
            out.append("&amp;")
        else:
            out.append(_ESCAPES.get(ch, ch))
    line = "".join(out)
    # A heading, quote or list cannot start here (values are one line, but may start one).
    return re.sub(r"^([#>+=-])", r"\\\1", line) if not cell else line


def _span(text: str, *, cell: bool) -> str:
    """A code span showing ``text`` (backticks in it cannot end the span)."""
    text = _no_markers(text)
    if cell:
        text = text.replace("|", "\\|")
    runs = [len(run) for run in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def untrusted(text: object, *, where: Where) -> str:
    """``text`` shown as itself and harmless at ``where`` (see the module)."""
    line = _visible(str(text))
    if where == "code":  # a line inside a fenced block: no fence of its own, no marker of ours
        return _no_markers(_FENCE_RUN.sub(lambda m: " ".join(m.group()), line))
    if where in ("span", "cell-span"):
        return _span(line, cell=where == "cell-span")
    if where in ("prose", "cell"):
        return _escaped(line, cell=where == "cell")
    raise ValueError(f"unknown place for text: {where!r}")
