"""Compare an environment's pins (``expect:``) with what its probe found."""

from __future__ import annotations

import re

from backport.config.model import Environment
from backport.envs.model import Probe


def normalize_dist(name: str) -> str:
    """PEP 503 name normalization: ``torch_npu``, ``Torch-NPU`` -> ``torch-npu``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_version(probe: Probe, dist: str) -> str | None:
    """The probed version of ``dist`` under any spelling of its name (``python`` too)."""
    if normalize_dist(dist) == "python":
        return probe.python
    wanted = normalize_dist(dist)
    found = None
    for name, version in probe.packages.items():
        if normalize_dist(name) == wanted:
            if version is not None:
                return version
            found = version
    return found


def version_matches(pin: str, installed: str) -> bool:
    """Exact match, or equal once the installed local label (``+cpu``) is dropped.

    A pin with its own local label must match exactly; ``.postN`` and other public parts count
    (``2.7.1`` does not match ``2.7.1.post4``).
    """
    pin, installed = pin.strip(), installed.strip()
    if pin == installed:
        return True
    return "+" not in pin and installed.split("+", 1)[0] == pin


def python_matches(pin: str, installed: str) -> bool:
    """``3.11`` matches ``3.11.7``; ``3.11.7`` matches only itself."""
    pin = pin.strip()
    return installed == pin or installed.startswith(pin + ".")


def pin_mismatches(env: Environment, probe: Probe) -> list[str]:
    """One line per pin the environment does not satisfy, e.g. ``torch: expected 2.7.1, found 2.13.0+cpu``."""
    problems = []
    for dist, pin in env.expect.items():
        installed = installed_version(probe, dist)
        if installed is None:
            problems.append(f"{dist}: expected {pin}, not installed")
            continue
        is_python = normalize_dist(dist) == "python"
        ok = python_matches(pin, installed) if is_python else version_matches(pin, installed)
        if not ok:
            problems.append(f"{dist}: expected {pin}, found {installed}")
    return problems
