"""Reuse pip's dry-run resolution of an environment while nothing it depends on changed.

The key holds what the resolution reads here: requirements and indexes, Python and pip, machine
and C library, ``PIP_*`` variables and pip's configuration files; an index changes too, so a
resolution lives ``MAX_AGE`` at most. One owner-only JSON file per key in ``<cache>/resolutions/``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from backport.config.model import Environment
from backport.jsonfile import read_json, write_json

FORMAT = 2
MAX_AGE = 24 * 3600.0


def _pip_config_files(environ: Mapping[str, str]) -> list[Path]:
    """The files pip reads its configuration from (site, user, global, $PIP_CONFIG_FILE)."""
    home = Path(environ.get("HOME") or Path.home())
    xdg_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    xdg_dirs = (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep)
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs if d]
    files += [Path("/etc/pip.conf"), home / ".pip" / "pip.conf", xdg_home / "pip" / "pip.conf",
              Path(sys.prefix) / "pip.conf"]
    if environ.get("PIP_CONFIG_FILE"):
        files.append(Path(environ["PIP_CONFIG_FILE"]))
    return files


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def resolution_key(env: Environment, environ: Mapping[str, str] = os.environ) -> str:
    """Everything this machine's resolution of ``env`` depends on, as one string."""
    try:
        pip_version = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        pip_version = None
    parts = {
        "format": FORMAT,
        "requirements": list(env.requirements), "no_deps": list(env.no_deps),
        "extra_index_urls": list(env.extra_index_urls),
        "python": [sys.executable, sys.version], "pip": pip_version,
        "machine": [sys.platform, platform.machine(), *platform.libc_ver()],
        "pip_environ": sorted((k, v) for k, v in environ.items() if k.startswith("PIP_")),
        "pip_config": [(str(p), _file_digest(p)) for p in _pip_config_files(environ)],
    }
    return json.dumps(parts, sort_keys=True)


def _digest(key: str) -> str:
    """Only a key's digest is written: a PIP_INDEX_URL may hold a password."""
    return hashlib.sha256(key.encode()).hexdigest()


def _slot(cache_dir: Path, key: str) -> Path:
    return cache_dir / "resolutions" / f"{_digest(key)[:24]}.json"


def stored_resolution(cache_dir: Path, key: str, *, now: float | None = None
                      ) -> tuple[list[dict], float] | None:
    """The stored items of ``key`` and when they were resolved, unless older than MAX_AGE."""
    now = time.time() if now is None else now
    data = read_json(_slot(cache_dir, key), None)
    try:
        created = float(data["created"])
        if data.get("key") == _digest(key) and 0 <= now - created <= MAX_AGE:
            return list(data["items"]), created
    except (ValueError, TypeError, KeyError):
        pass
    return None


def store_resolution(cache_dir: Path, key: str, items: list[dict]) -> None:
    """Keep ``items`` for ``key``; a cache that cannot be written only costs a resolution."""
    try:
        write_json(_slot(cache_dir, key), {"key": _digest(key), "created": time.time(),
                                           "items": items})
    except OSError:
        pass
