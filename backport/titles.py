"""Branch tags in titles: which tag names a branch, a title without them, a backport's title.

Titles of the same change on several branches differ by a tag naming the branch: a leading
``[master]``, ``【v2.12.0】`` or ``(master)`` (also among other leading tags), a scope
``fix(v2.11.0): …``, or a trailing ``(master)``, ``- master`` or ``_2.12``. `backport_title`
and the audit's looser `title_key` both read them here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_VERSION = re.compile(r"v?(\d+(?:\.\d+)+)")
_OPEN_CLOSE = {"[": "]", "【": "】", "(": ")"}
_LEADING = re.compile(r"\s*([\[【(])([^\[\]【】()]{1,64})([\]】)])\s*")
_SCOPE = re.compile(r"(\w+)\(([^()]{1,64})\)(!?):\s*")
_TRAILING = (
    re.compile(r"\s*([\[【(])([^\[\]【】()]{1,64})([\]】)])\s*$"),
    re.compile(r"(?:\s+-\s*|\s*-\s+)([^\s-][^\s]{0,63})\s*$"),
    re.compile(r"_(v?\d+(?:\.\d+)+|master|main)\s*$"),
)


def names_branch(tag: str, branch: str) -> bool:
    """True when ``tag`` (the text inside a title's tag) names ``branch``: the same name in any
    case, or for ``v2.7.1`` the version with or without ``v``, whole or cut (``2.7``)."""
    text, name = tag.strip().lower(), branch.strip().lower()
    if text == name:
        return True
    said, version = _VERSION.fullmatch(text), _VERSION.fullmatch(name)
    if said is None or version is None:
        return False
    return version.group(1) == said.group(1) or version.group(1).startswith(said.group(1) + ".")


def _names_any(tag: str, branches: tuple[str, ...]) -> bool:
    return any(names_branch(tag, branch) for branch in branches)


def _strip_leading(title: str, branches: tuple[str, ...]) -> str:
    """The leading run of tags without those naming a branch (the others kept, in order)."""
    kept, at = [], 0
    while (found := _LEADING.match(title, at)) is not None:
        opening, inside, closing = found.groups()
        if _OPEN_CLOSE[opening] != closing:
            break
        if not _names_any(inside, branches):
            kept.append(found.group(0).lstrip())
        at = found.end()
    rest = title[at:]
    if (scope := _SCOPE.match(rest)) is not None and _names_any(scope.group(2), branches):
        rest = f"{scope.group(1)}{scope.group(3)}: {rest[scope.end():]}"
    return "".join(kept) + rest


def _strip_trailing(title: str, branches: tuple[str, ...]) -> str:
    """The title without the trailing tags naming a branch."""
    while True:
        for pattern in _TRAILING:
            if (found := pattern.search(title)) is None:
                continue
            groups = found.groups()
            if len(groups) == 3 and _OPEN_CLOSE[groups[0]] != groups[2]:
                continue
            if _names_any(groups[1] if len(groups) == 3 else groups[0], branches):
                title = title[:found.start()].rstrip()
                break
        else:
            return title


def strip_branch_tags(title: str, branches: Iterable[str]) -> str:
    """``title`` without its leading and trailing tags naming one of ``branches`` (``title``
    itself, trimmed, when nothing else would be left)."""
    names = tuple(branches)
    original = " ".join(title.split())
    stripped = _strip_trailing(_strip_leading(original, names), names).strip()
    return stripped or original


# A release name as titles write it: v2.12.0, v2.11, 2.7.1 (with a v or at least two dots).
_ANY_VERSION = r"(?:v\d+(?:\.\d+)+(?:[-.]?[a-z]+\d*)?|\d+\.\d+\.\d+(?:[-.]?[a-z]+\d*)?)"
_TRUNKS = ("master", "main")  # named by a tag even when not mapped


def title_key(title: str, branches: Iterable[str]) -> str:
    """A title as the audit compares it: `strip_branch_tags`, less release or branch names in
    brackets (``[torch_2.7.1]``) or at either end (``… master``), lower case, no full stop."""
    names = tuple(branches)
    title = strip_branch_tags(title, names)
    longest_first = sorted({b for b in names if b} | set(_TRUNKS), key=len, reverse=True)
    tag = "(?:" + "|".join([*map(re.escape, longest_first), _ANY_VERSION]) + ")"
    # a bracket that names a branch or release among its words: [torch_master], (2.7.1)
    text = re.sub(rf"[\[【(（][^\]】)）\[【(（]*?(?<![A-Za-z0-9.]){tag}(?![A-Za-z0-9])"
                  rf"[^\]】)）]*[\]】)）]", " ", title, flags=re.IGNORECASE)
    for _ in range(3):  # "x - v2.12.0 master" loses both
        text = re.sub(rf"(?:^|[\s_\-–—:/,|]+){tag}[\s_\-–—:/,|.]*$", "", text.strip(),
                      flags=re.IGNORECASE)
        text = re.sub(rf"^{tag}(?:[\s_\-–—:/,|]+|$)", "", text.strip(), flags=re.IGNORECASE)
    text = re.sub(r"\s*([\]】)）])\s*", r"\1 ", re.sub(r"\s*([\[【(（])", r" \1", text))
    words = " ".join(text.split()).strip(" -_–—:|,.;。").lower()
    return words or " ".join(title.split()).lower()


def backport_title(title: str, *, source: str | None, target: str, tag: str | None) -> str:
    """The title of a backport into ``target`` of ``title`` on ``source`` (None: not made from a
    PR): the source's tags dropped; ``tag`` (the target's ``title_tag``) replaces the target's."""
    drop = [b for b in (source, target if tag else None) if b]
    text = strip_branch_tags(title, drop) if drop else " ".join(title.split())
    return f"{tag} {text}" if tag else text
