"""A fingerprint of everything that can change what an environment's interpreter sees.

The torch_npu overlays kept in the cache folder (``overlay``) are valid only while it stays
the same: the interpreter (its path, where it really lives, its size and mtime), every folder
on its ``sys.path`` (mtime and size; in site-packages also each ``.dist-info`` / ``.egg-info``
/ ``.pth`` entry, so an install, an upgrade or an uninstall shows), the environment's variables,
the content of its ``source:`` script, its wrapper, the variables of the calling process that
reach the interpreter's imports or the device (``PYTHON*``, ``LD_LIBRARY_PATH``, ``ASCEND_*``,
``TORCH_*``, ``*_VISIBLE_DEVICES``) and the files a probe reads for CANN facts and NPU devices.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from backport import process
from backport.config.model import Environment
from backport.errors import BackportError

QUERY_TIMEOUT = 30.0
_QUERY = "import json, sys; print(json.dumps({'path': sys.path, 'prefix': sys.prefix}))"
_VAR_PREFIXES = ("PYTHON", "ASCEND_", "TORCH_", "NPU_")
_VAR_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "HOME")
# What scripts/probe_env.py reads for CANN (kept in step with it) and where NPUs show up.
CANN_ROOT_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
CANN_FIXED_DIRS = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann")
CANN_VERSION_FILES = ("version.cfg", "version.info", "ascend_toolkit_install.info",
                      "*/version.info", "*/ascend_toolkit_install.info")
DEVICE_GLOBS = ("/dev/davinci*", "/usr/local/Ascend/driver/version.info")
_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".pth", ".egg-link")


class FingerprintError(Exception):
    """The interpreter could not be asked for its search path."""


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def _folder(path: str) -> dict:
    entry: dict = {"path": path, "stat": _stat(path)}
    if path.rstrip("/").endswith(("site-packages", "dist-packages")):
        try:
            names = sorted(n for n in os.listdir(path) if n.endswith(_METADATA_SUFFIXES))
        except OSError:
            names = []
        entry["metadata"] = [[n, _stat(os.path.join(path, n))] for n in names]
    return entry


def _search_path(env: Environment, environ: Mapping[str, str]) -> dict:
    """The interpreter's ``sys.path`` and prefix, asked directly (a plain start, no imports)."""
    variables = process.secret_free(environ)
    variables.update(env.env)
    try:
        done = process.run([str(env.interpreter), "-c", _QUERY], env=variables,
                           timeout=QUERY_TIMEOUT)
    except BackportError as exc:  # it cannot start
        raise FingerprintError(exc.message) from None
    if done.timed_out:
        raise FingerprintError(f"cannot read the search path of {env.interpreter}: timed out "
                               f"after {QUERY_TIMEOUT:g}s")
    try:
        return dict(json.loads(done.out.strip().splitlines()[-1]))
    except (ValueError, IndexError) as exc:
        raise FingerprintError(f"cannot read the search path of {env.interpreter}: {exc}") \
            from None


def _cann_files(environ: Mapping[str, str]) -> list:
    roots = [environ.get(name) for name in CANN_ROOT_VARS] + list(CANN_FIXED_DIRS)
    found = []
    for root in roots:
        if not root:
            continue
        found.append([root, os.path.realpath(root), _stat(root)])
        for pattern in CANN_VERSION_FILES:
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                found.append([path, _stat(path)])
    for pattern in DEVICE_GLOBS:
        for path in sorted(glob.glob(pattern)):
            found.append([path, _stat(path)])
    return found


def fingerprint(env: Environment, environ: Mapping[str, str] | None = None) -> str:
    """A hex digest that changes whenever anything above changes; FingerprintError when the
    interpreter cannot be asked."""
    environ = os.environ if environ is None else environ
    interpreter = str(Path(env.interpreter).absolute())
    query = _search_path(env, environ)
    source = None
    if env.source is not None:
        try:
            source = hashlib.sha256(Path(env.source).read_bytes()).hexdigest()
        except OSError:
            source = "unreadable"
    variables = {k: v for k, v in environ.items()
                 if k.startswith(_VAR_PREFIXES) or k in _VAR_NAMES or k.endswith("VISIBLE_DEVICES")}
    facts = {
        "interpreter": [interpreter, os.path.realpath(interpreter), _stat(interpreter)],
        "prefix": query.get("prefix"),
        "path": [_folder(p) for p in query.get("path") or [] if p and os.path.isdir(p)],
        "env": sorted(env.env.items()),
        "source": [str(env.source) if env.source else None, source],
        "wrapper": list(env.wrapper),
        "variables": sorted(variables.items()),
        "cann": _cann_files(environ),
    }
    text = json.dumps(facts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
