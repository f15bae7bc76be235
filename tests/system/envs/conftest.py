"""Fixtures for the envs tests: the real torch interpreter (BACKPORT_TEST_PYTHON) and files."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.envs.model import AUTOLOAD, Probe
from backport.envs.probe import LOAD_CHECK_TIMEOUT, probe
from backport.envs.worker import EarlyWorker
from tests.helpers.torch_probes import TORCH_PINS, probed_once, shared_folder


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
    """The torch environment, pinned as the map pins one (the probe reads the pinned names)."""
    return Environment(name="torch-2.13.0", python=torch_python, timeout=120.0,
                       expect=dict(TORCH_PINS))


Probed = Callable[[Environment], Probe]


@pytest.fixture(scope="session")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Probed:
    """``probe(env)``, run once per environment for the whole run (``probed_once``).

    The probe is a child process that imports torch (a second or two); the runner only reads
    its verdict, which no test here changes, so one probe per environment serves every test.
    """
    shared = shared_folder(tmp_path_factory)
    return lambda env: probed_once(env, shared)


@pytest.fixture
def plain_env() -> Environment:
    """An environment whose interpreter is the one running the tests (no torch)."""
    return Environment(name="plain", python=Path(sys.executable), timeout=60.0)


def folded_probe(env: Environment) -> tuple[Probe, EarlyWorker]:
    """``env``'s probe, its torch_npu load check run by the warm worker started for the run
    (as ``Environments.prewarm`` does: one import of torch for both), and that worker, for the
    test's runner to adopt (``TestRunner(..., early=)``) or discard."""
    early = EarlyWorker(env, {AUTOLOAD: "0"}, load_check=LOAD_CHECK_TIMEOUT)
    return probe(env, load_check=early.load_check_result), early


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path
