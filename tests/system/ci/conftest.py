"""Fixtures of the workflow tests: the sandbox, a folder of wheels pip installs backport from,
and a runner's tool cache. The last two are built once per test session: under pytest-xdist
the workers share them (the first builds, the others wait on a lock); nothing writes to them
afterwards (pip reads the wheels, setup-python copies the cache's Python)."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.project import gitcode, sandbox  # noqa: F401  (registered as fixtures)
from tests.helpers.wheels import build_backport_wheel, setup_wheelhouse
from tests.helpers.workflow_harness import fill_tool_cache


def _once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """Folder ``name``, filled by ``build`` once in this session (shared by its xdist workers:
    their base folders lie in the session's own)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        folder = factory.mktemp(name)
        build(folder)
        return folder
    root = factory.getbasetemp().parent
    folder, done = root / name, root / f"{name}.done"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """backport's wheel beside the wheels of its dependencies and build backend that set-up
    holds: the workflows' own `pip install` steps then run with PIP_NO_INDEX against it, and
    nothing here asks a package registry."""
    def build(folder: Path) -> None:
        for wheel in setup_wheelhouse().glob("*.whl"):
            (folder / wheel.name).symlink_to(wheel)
        shutil.copy2(build_backport_wheel(tmp_path_factory.mktemp("build")), folder)
    return _once(tmp_path_factory, "wheelhouse", build)


@pytest.fixture(scope="session")
def tool_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GitHub runner's tool cache, for `actions/setup-python`: its Python is built once and
    each job gets a copy of its own (workflow_harness.tool_python)."""
    return _once(tmp_path_factory, "toolcache", fill_tool_cache)
