"""Fixtures of the workflow tests: the sandbox, a folder of wheels pip installs backport from,
and a runner's tool cache. The last two are built once per test session (shared by its
pytest-xdist workers: tests/helpers/session_builds.py); nothing writes to them afterwards (pip
reads the wheels, setup-python copies the cache's Python)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.workflow_harness import fill_tool_cache
from tests.helpers.session_builds import built_once
from tests.helpers.wheels import session_backport_wheel, setup_wheelhouse


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """backport's wheel beside the wheels of its dependencies and build backend that set-up
    holds: the workflows' own `pip install` steps then run with PIP_NO_INDEX against it, and
    nothing here asks a package registry."""
    def build(folder: Path) -> None:
        for wheel in [*setup_wheelhouse().glob("*.whl"), session_backport_wheel(tmp_path_factory)]:
            (folder / wheel.name).symlink_to(wheel)
    return built_once(tmp_path_factory, "wheelhouse", build)


@pytest.fixture(scope="session")
def tool_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GitHub runner's tool cache, for `actions/setup-python`: its Python is built once and
    each job gets a copy of its own (workflow_harness.tool_python)."""
    return built_once(tmp_path_factory, "toolcache", fill_tool_cache)
