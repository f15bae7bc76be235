"""One probe per environment for the whole test process: a torch environment's probe runs the
torch_npu load check in a process that imports torch (a second or two), and no test changes
what it reads, so the envs and sandbox tests share it (a frozen record)."""

from __future__ import annotations

import threading

from backport.config.model import Environment
from backport.envs.model import Probe
from backport.envs.probe import probe

_LOCK = threading.Lock()
_PROBES: dict[str, Probe] = {}

TORCH_PINS = {"torch-npu": "2.13.0", "torch": "2.13.0"}  # as the map pins one


def probed_once(env: Environment) -> Probe:
    """``probe(env)``, run once per environment (its text: a frozen record with dict fields)."""
    key = repr(env)
    with _LOCK:
        if key not in _PROBES:
            _PROBES[key] = probe(env)
        return _PROBES[key]
