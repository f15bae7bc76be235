"""The packaging test's wheel: backport's, built once per test session (shared with the
workflow tests' wheelhouse: tests/helpers/wheels.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.wheels import session_backport_wheel


@pytest.fixture(scope="session")
def backport_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """backport's wheel, built by pip from a copy of the checkout (read only)."""
    return session_backport_wheel(tmp_path_factory)
