"""`backport demo`: the offline sandbox end to end, and an explicit --python taken at its word."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from tests.pipeline.conftest import TORCH_PYTHON, needs_torch, run_cli


def test_an_explicit_python_without_torch_is_refused_not_replaced(tmp_path: Path) -> None:
    # The tool's own interpreter has no torch; another one with torch may well exist here.
    result = run_cli(tmp_path, "demo", "--dir", str(tmp_path / "sb"), "--python", sys.executable)
    assert result.code == 2, result.err
    assert result.err.strip() == f"error: --python {sys.executable} has no torch installed"
    assert not (tmp_path / "sb").exists()


@needs_torch
def test_demo_opens_four_prs_with_tests_run_under_the_given_python(tmp_path: Path) -> None:
    assert TORCH_PYTHON is not None
    result = run_cli(tmp_path, "demo", "--dir", str(tmp_path / "sb"), "--python", TORCH_PYTHON)
    assert result.code == 0, result.err
    assert f"tests run under: {TORCH_PYTHON}" in result.out + result.err
    with sqlite3.connect(tmp_path / "sb" / "project" / ".backport" / "forge.sqlite") as db:
        bases = sorted(base for (base,) in db.execute("SELECT base FROM prs"))
    assert bases == ["master", "v2.11.0", "v2.12.0", "v2.7.1"]
