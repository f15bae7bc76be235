"""Fixtures for the envs tests: the real torch interpreter (BACKPORT_TEST_PYTHON) and files."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from backport.config.model import Environment


@pytest.fixture(scope="session")
def torch_python() -> Path:
    """The torch 2.13.0 CPU + torch_npu (no CANN) interpreter; skip when not configured."""
    value = os.environ.get("BACKPORT_TEST_PYTHON")
    if not value:
        pytest.skip("BACKPORT_TEST_PYTHON is not set (path of a python with torch 2.13.0+cpu)")
    path = Path(value).expanduser()
    if not path.exists():
        pytest.skip(f"BACKPORT_TEST_PYTHON={value} does not exist")
    return path


@pytest.fixture(scope="session")
def torch_env(torch_python: Path) -> Environment:
    return Environment(name="torch-2.13.0", python=torch_python, timeout=120.0)


@pytest.fixture
def plain_env() -> Environment:
    """An environment whose interpreter is the one running the tests (no torch)."""
    return Environment(name="plain", python=Path(sys.executable), timeout=60.0)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path
