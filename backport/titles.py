"""Branch tags in titles: which tag names a branch, a title without them, a backport's title.

Titles of the same change on several branches differ by a tag naming the branch: a leading
``[master]``, ``[2.7.1]``, ``【v2.12.0】`` or ``(master)`` (also among other leading tags:
``[fix][2.11.0]fix …``), a conventional-commit scope ``fix(v2.11.0): …``, or a trailing
``(master)``, ``[v2.7.1]``, ``- master`` or ``_2.12``. `backport_title` (from-PR backports)
and the audit's "same title" rules (`title_key`, looser) both read them here; pure functions,
no I/O.
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
    """True when ``tag`` (the text inside a title's tag) names ``branch``: the same name in
    any case, or for a version branch (``v2.7.1``) the version with or without ``v``, whole or
    cut after its minor number (``2.7.1``, ``v2.7``, ``2.7``)."""
    text, name = tag.strip().lower(), branch.strip().lower()
    if not text:
        return False
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
    scope = _SCOPE.match(rest)
    if scope is not None and _names_any(scope.group(2), branches):
        rest = f"{scope.group(1)}{scope.group(3)}: {rest[scope.end():]}"
    return "".join(kept) + rest


def _strip_trailing(title: str, branches: tuple[str, ...]) -> str:
    """The title without the trailing tags naming a branch."""
    while True:
        for pattern in _TRAILING:
            found = pattern.search(title)
            if found is None:
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
    """``title`` without its leading and trailing tags that name one of ``branches`` (see the
    module docstring); ``title`` itself, trimmed, when nothing else would be left."""
    names = tuple(branches)
    original = " ".join(title.split())
    stripped = _strip_trailing(_strip_leading(original, names), names).strip()
    return stripped or original


# A release name as titles write it: v2.12.0, v2.11, 2.7.1 (with a v or at least two dots).
_ANY_VERSION = r"(?:v\d+(?:\.\d+)+(?:[-.]?[a-z]+\d*)?|\d+\.\d+\.\d+(?:[-.]?[a-z]+\d*)?)"
_TRUNKS = ("master", "main")  # named by a tag even when not mapped


def _tag(branches: Iterable[str]) -> str:
    names = sorted({b for b in branches if b} | set(_TRUNKS), key=len, reverse=True)
    return "(?:" + "|".join([*(re.escape(n) for n in names), _ANY_VERSION]) + ")"


def _loose(title: str, branches: Iterable[str] = ()) -> str:
    """``title`` less the tags naming a branch or release: bracketed anywhere (``[v2.12.0]``,
    ``(v2.7.1)``, ``[torch_2.7.1]``, ``[v2.7.1_logs]``), or at its start or end after a
    separator or a space (``- v2.7.1``, ``_v2.11``, `` master``); its words joined by one space,
    lower case, without a closing full stop or separator. A title that is nothing but a tag
    stays as it was (only spaces and case)."""
    tag = _tag(branches)
    # a bracket that names a branch or release among its words: [v2.12.0], [torch_master],
    # [v2.7.1_logs], (2.7.1)
    text = re.sub(rf"[\[【(（][^\]】)）\[【(（]*?(?<![A-Za-z0-9.]){tag}(?![A-Za-z0-9])"
                  rf"[^\]】)）]*[\]】)）]", " ", title, flags=re.IGNORECASE)
    for _ in range(3):  # "x - v2.12.0 master" loses both
        text = re.sub(rf"(?:^|[\s_\-–—:/,|]+){tag}[\s_\-–—:/,|.]*$", "", text.strip(),
                      flags=re.IGNORECASE)
        text = re.sub(rf"^{tag}(?:[\s_\-–—:/,|]+|$)", "", text.strip(), flags=re.IGNORECASE)
    text = re.sub(r"\s*([\]】)）])\s*", r"\1 ", re.sub(r"\s*([\[【(（])", r" \1", text))
    words = " ".join(text.split()).strip(" -_–—:|,.;。").lower()
    return words or " ".join(title.split()).lower()


def title_key(title: str, branches: Iterable[str]) -> str:
    """A title as the audit's same-title rules compare it: `strip_branch_tags`, then, looser,
    any release or branch name in a bracket among other words (``[torch_2.7.1]``,
    ``[v2.7.1_logs]``) or at the end after a space (``… master``, ``… v2.11``), brackets
    spaced alike, lower case, without a closing full stop."""
    names = tuple(branches)
    return _loose(strip_branch_tags(title, names), names)


def backport_title(title: str, *, source: str | None, target: str, tag: str | None) -> str:
    """The title of a backport into ``target`` of a change titled ``title`` on ``source`` (None:
    not made from a PR): the source's branch tags dropped; with ``tag`` (the target's
    ``title_tag``), any tag naming the target is replaced by it, in front."""
    drop = [b for b in (source, target if tag else None) if b]
    text = strip_branch_tags(title, drop) if drop else " ".join(title.split())
    return f"{tag} {text}" if tag else text
