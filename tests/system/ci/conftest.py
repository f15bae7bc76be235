"""Fixtures of the workflow tests: the sandbox, and a folder of wheels pip installs backport from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.project import ROOT, gitcode, sandbox  # noqa: F401  (registered as fixtures)


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """backport's wheel, its dependencies' and its build backend's, built once per session:
    the workflows' own `pip install` steps then run with PIP_NO_INDEX against it."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--wheel-dir", str(folder), str(ROOT)], check=True)
    subprocess.run([*pip, "download", "--dest", str(folder), "setuptools>=68", "wheel"],
                   check=True)
    return folder
