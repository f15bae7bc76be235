"""Fixtures of the sandbox tests: a plain and a torch environment."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.envs import sandbox
from backport.envs.model import Probe
from tests.helpers.sandbox_writes import project  # noqa: F401  (a fixture of these tests)
from tests.helpers.torch_probes import TORCH_PINS, probed_once, shared_folder


@pytest.fixture
def plain_env() -> Environment:
    """An environment whose interpreter runs these tests (no torch: tests run isolated)."""
    return Environment(name="plain", python=Path(sys.executable), timeout=60.0)


@pytest.fixture(scope="session")
def torch_env() -> Environment:
    """The torch interpreter of BACKPORT_TEST_PYTHON (warm workers); skip without it."""
    value = os.environ.get("BACKPORT_TEST_PYTHON")
    if not value or not Path(value).expanduser().exists():
        pytest.skip("BACKPORT_TEST_PYTHON is not set (path of a python with torch 2.13.0+cpu)")
    return Environment(name="torch-2.13.0", python=Path(value).expanduser(), timeout=120.0,
                       expect=dict(TORCH_PINS))  # the envs tests' one: their probe serves both


@pytest.fixture(scope="session")
def torch_probe(torch_env: Environment, tmp_path_factory: pytest.TempPathFactory) -> Probe:
    """The torch interpreter's probe, read once (its torch_npu load check imports torch): the
    facts of one interpreter hold for the session; shared with
    the envs tests (``probed_once``)."""
    return probed_once(torch_env, shared_folder(tmp_path_factory))


@pytest.fixture
def refusing_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The host refuses namespaces (the probe's own test switch), probed afresh."""
    monkeypatch.setenv("BACKPORT_SANDBOX_REFUSE", "1")
    sandbox.forget()
    yield
    monkeypatch.delenv("BACKPORT_SANDBOX_REFUSE")
    sandbox.forget()


def needs_namespaces() -> None:
    """Skip where this host itself refuses namespaces (the sandbox cannot be shown here)."""
    sandbox.forget()
    found = sandbox.isolation()
    if not found.isolated:
        pytest.skip(f"this host refuses PID namespaces: {found.why}")
