"""Compare an environment's pins (``expect:``) with what its probe found."""

from __future__ import annotations

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from backport.config.model import Environment
from backport.envs.model import Probe


def installed_version(probe: Probe, dist: str) -> str | None:
    """The probed version of ``dist`` under any spelling of its name (``python`` too)."""
    wanted = canonicalize_name(dist)
    if wanted == "python":
        return probe.python
    found = None
    for name, version in probe.packages.items():
        if canonicalize_name(name) == wanted:
            if version is not None:
                return version
            found = version
    return found


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def version_matches(pin: str, installed: str) -> bool:
    """Equal as PEP 440 versions, or equal once the installed local label (``+cpu``) is dropped.

    A pin with its own local label must match exactly; ``.postN`` and other public parts count
    (``2.7.1`` does not match ``2.7.1.post4``). Text that is no PEP 440 version must be equal.
    """
    want, have = _version(pin.strip()), _version(installed.strip())
    if want is None or have is None:
        return pin.strip() == installed.strip()
    return want == (have if want.local else Version(have.public))


def python_matches(pin: str, installed: str) -> bool:
    """``3.11`` matches ``3.11.7``; ``3.11.7`` matches only itself."""
    want, have = _version(pin.strip()), _version(installed.strip())
    if want is None or have is None:
        return pin.strip() == installed.strip()
    if want.public != want.base_version:  # a pre-, post- or dev-release is compared whole
        return want == have
    return have.release[: len(want.release)] == want.release


def pin_mismatches(env: Environment, probe: Probe) -> list[str]:
    """One line per pin the environment does not satisfy, e.g. ``torch: expected 2.7.1, found 2.13.0+cpu``."""
    problems = []
    for dist, pin in env.expect.items():
        installed = installed_version(probe, dist)
        if installed is None:
            problems.append(f"{dist}: expected {pin}, not installed")
            continue
        is_python = canonicalize_name(dist) == "python"
        ok = python_matches(pin, installed) if is_python else version_matches(pin, installed)
        if not ok:
            problems.append(f"{dist}: expected {pin}, found {installed}")
    return problems
