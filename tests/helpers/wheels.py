"""Wheels for the tests: tiny ones built by hand, and backport's own, built offline from the
wheelhouse scripts/setup.sh fills (no package registry)."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers.session_builds import built_once


def build_wheel(
    directory: Path, name: str = "tinypkg", version: str = "1.0", requires: tuple[str, ...] = ()
) -> Path:
    """A minimal pure-Python wheel, made by hand so no build tool or network is needed."""
    files = {
        f"{name}/__init__.py": f'VERSION = "{version}"\n',
        f"{name}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + "".join(f"Requires-Dist: {line}\n" for line in requires)
        ),
        f"{name}-{version}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record_name = f"{name}-{version}.dist-info/RECORD"
    records = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        records.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    records.append(f"{record_name},,")
    files[record_name] = "\n".join(records) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


ROOT = Path(__file__).resolve().parents[2]
# Filled by scripts/setup.sh (ignored by git): backport's dependencies as .venv holds them, and
# its build backend.
SETUP_WHEELHOUSE = ROOT / ".ci" / "wheelhouse"
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", ".ci", "build", "dist", "*.egg-info",
                                     "__pycache__", ".backport", "out", ".pytest_cache")


def setup_wheelhouse() -> Path:
    """The wheelhouse scripts/setup.sh filled; a test that needs it fails without it."""
    if not (SETUP_WHEELHOUSE / ".complete").is_file():
        pytest.fail(f"{SETUP_WHEELHOUSE} is not filled: run `bash scripts/setup.sh` first")
    return SETUP_WHEELHOUSE


def offline_pip() -> dict[str, str]:
    """pip's settings for an install from the set-up wheelhouse only: no package registry."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(setup_wheelhouse()),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def build_backport_wheel(work: Path) -> Path:
    """backport's wheel from a copy of the checkout (pip builds in the source tree; the
    checkout stays untouched), with pip's usual build isolation, offline: setuptools comes from
    the set-up wheelhouse."""
    source = work / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_SOURCES)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "--wheel-dir", str(work / "dist"), str(source)], cwd=work,
                           capture_output=True, text=True, check=False, timeout=600,
                           env={**os.environ, **offline_pip()})
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (work / "dist").glob("backport-*.whl")
    return wheel


def session_backport_wheel(factory: pytest.TempPathFactory) -> Path:
    """backport's wheel (:func:`build_backport_wheel`), built once per test session for every
    test that installs it (the workflows' wheelhouse, the installed-wheel test); read only."""
    folder = built_once(factory, "backport-wheel", build_backport_wheel)
    (wheel,) = (folder / "dist").glob("backport-*.whl")
    return wheel
