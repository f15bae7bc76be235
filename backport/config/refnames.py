"""Branch-name rules of ``git check-ref-format --branch``, checked without running git."""

from __future__ import annotations

_FORBIDDEN_CHARS = frozenset(" ~^:?*[\\")
MAX_COMPONENT_BYTES = 255


def refname_problem(name: str) -> str | None:
    """Why ``name`` is not a valid branch name (``git help check-ref-format``), or ``None``."""
    if not name:
        return "is empty"
    if name in ("@", "HEAD"):
        return f"'{name}' is reserved by git"
    if name.startswith("-"):
        return "starts with '-'"
    for ch in name:
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            return "contains a control character"
        if ch in _FORBIDDEN_CHARS:
            return "contains a space" if ch == " " else f"contains '{ch}'"
    if ".." in name:
        return "contains '..'"
    if "@{" in name:
        return "contains '@{'"
    if name.startswith("/") or name.endswith("/"):
        return "starts or ends with '/'"
    if "//" in name:
        return "contains '//'"
    if name.endswith("."):
        return "ends with '.'"
    for part in name.split("/"):
        if part.startswith("."):
            return f"has a component '{part}' starting with '.'"
        if part.endswith(".lock"):
            return f"has a component '{part}' ending with '.lock'"
        if len(part.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES:
            return f"has a component longer than {MAX_COMPONENT_BYTES} bytes"
    return None
