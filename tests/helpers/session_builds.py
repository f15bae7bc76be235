"""Folders built once per test session and only read afterwards (a wheel, a wheelhouse, a
runner's tool cache): under pytest-xdist the session's workers share them (the first builds,
the others wait on a lock), and two fixtures asking for one name get the same folder."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def session_root(factory: pytest.TempPathFactory) -> Path:
    """The folder every pytest-xdist process of this run sees: the base temporary folder's
    parent under xdist (the workers' base folders lie in it), else the base folder itself."""
    base = factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def built_once(factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], object]) -> Path:
    """Folder ``name`` of this session, filled by ``build`` the first time it is asked for
    (xdist workers' base folders lie in the session's own, where the folder is kept)."""
    root = session_root(factory)
    folder, done = root / name, root / f"{name}.done"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
