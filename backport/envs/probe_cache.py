"""Reuse an environment's probe while nothing it depends on changed (see ``fingerprint``).

One JSON file per interpreter and configuration under ``<cache>/probes/``, owner-only, written
atomically. A probe in which torch_npu loaded is never stored: NPU facts (device count,
health) can change without any file the fingerprint sees, so such an environment is probed
every run.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from backport.codec import decode, encode
from backport.config.model import Environment
from backport.envs.fingerprint import FingerprintError, fingerprint
from backport.envs.model import Probe
from backport.envs.probe import PROBE_SCRIPT, LoadCheck, probe

FORMAT = 1


def _slot(cache_dir: Path, env: Environment) -> Path:
    name = json.dumps([env.name, str(Path(env.interpreter).absolute())])
    return cache_dir / "probes" / f"{hashlib.sha256(name.encode()).hexdigest()[:24]}.json"


def stored_probe(
    env: Environment, cache_dir: Path, environ: Mapping[str, str] | None = None
) -> Probe | None:
    """``env``'s probe from ``cache_dir`` while nothing it depends on changed; else None."""
    try:
        key = _key(env, environ)
        data = json.loads(_slot(cache_dir, env).read_text(encoding="utf-8"))
        if data.get("format") == FORMAT and data.get("key") == key:
            return decode(Probe, data["probe"])
    except (FingerprintError, OSError, ValueError, TypeError, KeyError):
        pass
    return None


def cached_probe(
    env: Environment, cache_dir: Path, environ: Mapping[str, str] | None = None, *,
    load_check: LoadCheck | None = None,
) -> tuple[Probe, bool]:
    """``env``'s probe and whether it was reused from ``cache_dir`` (False: probed now, with
    ``load_check`` passed to :func:`probe`)."""
    try:
        key = _key(env, environ)
    except FingerprintError:
        return probe(env, load_check=load_check), False
    slot = _slot(cache_dir, env)
    try:
        data = json.loads(slot.read_text(encoding="utf-8"))
        if data.get("format") == FORMAT and data.get("key") == key:
            return decode(Probe, data["probe"]), True
    except (OSError, ValueError, TypeError, KeyError):
        pass
    result = probe(env, load_check=load_check)
    if result.torch_npu_loads is not True:
        _store(slot, {"format": FORMAT, "key": key, "probe": encode(result)})
    return result, False


def _key(env: Environment, environ: Mapping[str, str] | None) -> str:
    """The environment's fingerprint, the probe script itself and what it is asked to read."""
    script = hashlib.sha256(PROBE_SCRIPT.read_bytes()).hexdigest()
    return json.dumps([fingerprint(env, environ), script, sorted(env.expect)])


def _store(slot: Path, data: dict) -> None:
    try:
        slot.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=slot.parent, prefix=".probe-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, slot)
    except OSError:
        pass  # a cache that cannot be written only costs the next run a probe
