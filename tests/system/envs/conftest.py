"""Fixtures of the envs tests (the sandbox's among them): the real torch interpreter
(BACKPORT_TEST_PYTHON), its probe read once a run, a plain environment, a host that refuses
namespaces, and files."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from backport.codec import decode, encode
from backport.config.model import Environment
from backport.envs import sandbox
from backport.envs.model import AUTOLOAD, Probe
from backport.envs.probe import LOAD_CHECK_TIMEOUT, probe
from backport.envs.worker import EarlyWorker
from tests.helpers.sandbox_writes import project  # noqa: F401  (a fixture of the sandbox tests)
from tests.helpers.session_builds import session_root

TORCH_PINS = {"torch-npu": "2.13.0", "torch": "2.13.0"}  # as the map pins one

# One probe per environment for the whole test run: a torch environment's probe runs the
# torch_npu load check in a process that imports torch (a second or two), and no test changes
# what it reads, so the tests share it (a frozen record), and so do the pytest-xdist processes
# of one run (stored in a folder they share, as a run stores its probe).
_LOCK = threading.Lock()
_PROBES: dict[str, Probe] = {}


def shared_folder(factory: pytest.TempPathFactory) -> Path:
    """The run's stored torch probes: a folder every pytest-xdist process sees."""
    folder = session_root(factory) / "shared-probes"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def probed_once(env: Environment, shared: Path) -> Probe:
    """``probe(env)``, run once per environment in this run: the first process probes and
    stores it in ``shared``, the others read it; its text is a frozen record with dict fields."""
    key = repr(env)
    with _LOCK:
        if key not in _PROBES:
            stored = shared / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
            with open(shared / "lock", "a") as lock:  # one process probes, the others wait
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not stored.exists():
                    stored.write_text(json.dumps(encode(probe(env))), encoding="utf-8")
                _PROBES[key] = decode(Probe, json.loads(stored.read_text(encoding="utf-8")))
        return _PROBES[key]


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


@pytest.fixture(scope="session")
def torch_probe(torch_env: Environment, tmp_path_factory: pytest.TempPathFactory) -> Probe:
    """The torch interpreter's probe, read once (its torch_npu load check imports torch): the
    facts of one interpreter hold for the session (``probed_once``)."""
    return probed_once(torch_env, shared_folder(tmp_path_factory))


@pytest.fixture
def plain_env() -> Environment:
    """An environment whose interpreter is the one running the tests (no torch)."""
    return Environment(name="plain", python=Path(sys.executable), timeout=60.0)


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
