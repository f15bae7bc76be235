"""Fixtures of the workflow tests: the sandbox, a folder of wheels pip installs backport from,
and a runner's tool cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.project import gitcode, sandbox  # noqa: F401  (registered as fixtures)
from tests.helpers.wheels import build_backport_wheel, setup_wheelhouse


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """backport's wheel, built once per session, beside the wheels of its dependencies and
    build backend that set-up holds: the workflows' own `pip install` steps then run with
    PIP_NO_INDEX against it, and nothing here asks a package registry."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    for wheel in setup_wheelhouse().glob("*.whl"):
        (folder / wheel.name).symlink_to(wheel)
    shutil.copy2(build_backport_wheel(tmp_path_factory.mktemp("build")), folder)
    return folder


@pytest.fixture(scope="session")
def tool_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GitHub runner's tool cache, for `actions/setup-python`: its Python is built once per
    test process and each job gets a copy of its own (workflow_harness.tool_python)."""
    return tmp_path_factory.mktemp("toolcache")
