"""Files this tool keeps (the run journal, the audit store, the caches), written whole.

A write goes to a temporary file in the same folder, fsynced, given mode 0600 and renamed over
the old one, so a kill at any moment leaves the old file or the new one, never a torn one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from backport.errors import BackportError

_RAISE: Any = object()


def secure_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 for the directories this tool owns."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically with mode 0600, in a folder of mode 0700."""
    secure_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` as one line of JSON (no indent: the C encoder writes it)."""
    write_text(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")


def read_json(path: Path, default: Any = _RAISE, *, what: str = "file") -> Any:
    """The JSON of ``path``; when it cannot be read, ``default`` if given, else a config error."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if default is not _RAISE:
            return default
        raise BackportError(
            "config", f"{path}: the {what} cannot be read ({exc}); move it aside to start "
            f"over") from exc
