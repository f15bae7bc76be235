"""Read what a ``git format-patch`` file says about itself: author, touched paths, blob ids."""

from __future__ import annotations

import email.policy
import email.utils
import re
from dataclasses import dataclass, field
from email.parser import BytesParser
from pathlib import Path

_INDEX = re.compile(r"^index (?P<old>[0-9a-f]{4,64})\.\.(?P<new>[0-9a-f]{4,64})(?: \d+)?$")
_ZERO = re.compile(r"^0+$")


def unquote_path(text: str) -> str:
    """Undo git's C-style quoting of a path (``"a\\303\\244.py"`` -> ``aä.py``)."""
    text = text.rstrip("\t")
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    raw = text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return raw.encode("latin-1").decode("utf-8", "replace")


@dataclass
class PatchInfo:
    """Paths a patch touches and, per path, the abbreviated pre-image blob id."""

    paths: list[str] = field(default_factory=list)
    preimages: dict[str, str] = field(default_factory=dict)  # path -> old blob id (as written)


def _diff_git_path(rest: str) -> str | None:
    """The a-side path of ``diff --git a/X b/X`` when it can be read unambiguously."""
    if rest.startswith('"'):
        end = rest.find('" ', 1)
        return unquote_path(rest[: end + 1])[2:] if end > 0 else None
    if not rest.startswith("a/"):
        return None
    body = rest[2:]
    half = (len(body) - 3) // 2
    if half > 0 and body[half:half + 3] == " b/" and body[:half] == body[half + 3:]:
        return body[:half]
    return body.split(" b/", 1)[0]


def read_patch(text: str) -> PatchInfo:
    """Parse the diff part of a patch (mbox or plain ``git diff`` output)."""
    info = PatchInfo()
    seen: set[str] = set()
    current: str | None = None

    def add(path: str | None) -> None:
        if path and path not in seen:
            seen.add(path)
            info.paths.append(path)

    in_diff = False
    for line in text.splitlines():
        if line.startswith("diff --git "):
            in_diff = True
            current = _diff_git_path(line[len("diff --git "):])
            add(current)
            continue
        if not in_diff:
            continue
        for prefix, strip in (("--- ", "a/"), ("+++ ", "b/"),
                              ("rename from ", ""), ("rename to ", ""),
                              ("copy from ", ""), ("copy to ", "")):
            if line.startswith(prefix):
                name = unquote_path(line[len(prefix):])
                if name != "/dev/null" and name.startswith(strip):
                    name = name[len(strip):]
                    if prefix == "--- ":
                        current = name
                    add(name)
                break
        match = _INDEX.match(line)
        if match and current and not _ZERO.match(match.group("old")):
            info.preimages[current] = match.group("old")
    return info


def read_patch_file(path: Path) -> PatchInfo:
    """:func:`read_patch` for a file, decoding bytes leniently."""
    return read_patch(Path(path).read_bytes().decode("utf-8", "surrogateescape"))


def patch_author(path: Path) -> tuple[str, str] | None:
    """(name, email) from the ``From:`` header of a format-patch file, if it has one."""
    try:
        with open(path, "rb") as handle:
            message = BytesParser(policy=email.policy.default).parse(handle, headersonly=True)
        header = message.get("From")
        if header is None:
            return None
        addresses = getattr(header, "addresses", ())
        if addresses:
            name, addr = addresses[0].display_name, addresses[0].addr_spec
        else:
            name, addr = email.utils.parseaddr(str(header))
    except (OSError, ValueError, IndexError):
        return None
    if not addr or "@" not in addr:
        return None
    return (name or addr.split("@", 1)[0], addr)
