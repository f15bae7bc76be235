"""One probe per environment for the whole test run: a torch environment's probe runs the
torch_npu load check in a process that imports torch (a second or two), and no test changes
what it reads, so the envs and sandbox tests share it (a frozen record), and so do the
pytest-xdist processes of one run (stored in a folder they share, as a run stores its probe)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import threading
from pathlib import Path

import pytest

from backport.codec import decode, encode
from backport.config.model import Environment
from backport.envs.model import Probe
from backport.envs.probe import probe
from tests.helpers.session_builds import session_root

_LOCK = threading.Lock()
_PROBES: dict[str, Probe] = {}

TORCH_PINS = {"torch-npu": "2.13.0", "torch": "2.13.0"}  # as the map pins one


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
