"""A title without its branch tags: what stays the same when one fix is opened on each branch
("fix x - v2.12.0" and "fix x - v2.7.1", "[feat][v2.12.0] y" and "[feat] y", "z master" and
"z v2.11"). Pure: no git, no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A release name as titles write it: v2.12.0, v2.11, 2.7.1 (with a v or at least two dots).
_VERSION = r"(?:v\d+(?:\.\d+)+(?:[-.]?[a-z]+\d*)?|\d+\.\d+\.\d+(?:[-.]?[a-z]+\d*)?)"
_TRUNKS = ("master", "main")


def _tag(branches: Iterable[str]) -> str:
    names = sorted({b for b in branches if b} | set(_TRUNKS), key=len, reverse=True)
    return "(?:" + "|".join([*(re.escape(n) for n in names), _VERSION]) + ")"


def strip_branch_tags(title: str, branches: Iterable[str] = ()) -> str:
    """``title`` less the tags naming a branch or release: bracketed anywhere (``[v2.12.0]``,
    ``【master】``, ``(v2.7.1)``, ``[torch_2.7.1]``, ``[v2.7.1_logs]``), or at its start or end after a separator or a space
    (``- v2.7.1``, ``_v2.11``, `` master``, ``v2.12.0:``); its words then joined by one space,
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
