"""Fixtures of the workflow tests: the map repository, a folder of wheels pip installs backport from,
and a runner's tool cache. The last two are built once per test session (shared by its
pytest-xdist workers: tests/helpers/session_builds.py); nothing writes to them afterwards (pip
reads the wheels, setup-python copies the cache's Python)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fakes.workflow_harness import fill_tool_cache
from tests.helpers.project import ROOT, edit_config, git
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


# The repository a team keeps for CI (backport's source with its branches.yaml and patches/),
# and pip's offline settings, shared by the workflow tests.
def map_repository(sandbox, dest: Path, *, keep_environments: bool = False) -> tuple[Path, str]:
    """The repository a team keeps: backport's source with its branches.yaml and patches/,
    whose environments are (unless ``keep_environments``) not built on a CI runner. Returns it
    and its head commit."""
    if not keep_environments:
        edit_config(sandbox, lambda data: data.update(environments={  # venvs nobody built here
            name: {k: v for k, v in env.items() if k == "ci"}
            for name, env in data["environments"].items()}))
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "backport", dest / "backport",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(sandbox.config, dest / "branches.yaml")
    shutil.copytree(sandbox.project / "patches", dest / "patches")
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "map and patches")
    return dest, git(dest, "rev-parse", "HEAD")


def pip_offline(wheelhouse: Path) -> dict[str, str]:
    """pip of a workflow's steps: only ``wheelhouse``, no registry, and no byte-compiling of
    what it installs (two thirds of an install's CPU); Python compiles what it imports.
    ``PIP_COMPILE=0``, not ``PIP_NO_COMPILE=1``: pip reads a ``--no-…`` flag's variable as the
    value of its destination, so ``PIP_NO_COMPILE=1`` turns compiling *on*. (``python3 -m
    venv`` drops every ``PIP_*`` variable: its own pip is compiled either way.)"""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_COMPILE": "0"}
