"""SIGKILL of the process running the tests (as of `backport apply`) ends every process the
tests started, those in sessions of their own included, on every path a test runs (the
forked ones in test_secret_out_of_reach.py, whose run's driver is killed after its checks)."""

from __future__ import annotations

import sys
from pathlib import Path

from backport.config.model import Environment

from .conftest import kill_driver_and_watch, needs_namespaces


def test_isolated_run(plain_env: Environment, tmp_path: Path) -> None:
    needs_namespaces()
    assert kill_driver_and_watch(Path(sys.executable), tmp_path, "isolated") == []
