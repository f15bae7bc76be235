"""Probe the interpreter this script runs under and print one JSON object.

``probe_env.py [--timeout SECONDS] [--no-load-check] [DIST ...]``, standard library only.
Versions come from distribution metadata; torch and torch_npu are imported only in a fork
(:func:`run_load_check`). ``--no-load-check`` leaves that check to the warm worker and says
``"load_check": "wanted"`` when torch_npu is installed.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import selectors
import signal
import sys
import time
from typing import Any

BASE_DISTS = ("torch", "torch_npu", "expecttest", "numpy")
CANN_FIXED_DIRS = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann")
CANN_VERSION_FILES = ("version.cfg", "version.info", "ascend_toolkit_install.info",
                      "*/version.info", "*/ascend_toolkit_install.info")
_VERSION_LINE = re.compile(r"^\s*[Vv]ersion\s*[=:]\s*['\"]?([^'\"\s]+)")
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"


def dist_version(name: str) -> str | None:
    """Installed version of distribution ``name`` (any spelling of - _ .), or None."""
    from importlib import metadata

    spellings = [name, name.replace("-", "_"), name.replace("_", "-"), name.lower()]
    for spelling in dict.fromkeys(spellings):
        try:
            return metadata.version(spelling)
        except Exception:  # not installed, or a broken dist-info that must not sink the probe
            continue
    return None


def read_version_file(path: str) -> str | None:
    """The value of the first ``version=`` / ``Version=`` line of ``path``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = _VERSION_LINE.match(line)
                if match:
                    return match.group(1)
    except OSError:
        pass
    return None


def cann_version() -> str | None:
    """The CANN toolkit version, from the first install location that names one."""
    roots = [os.environ.get("ASCEND_HOME_PATH"), os.environ.get("ASCEND_TOOLKIT_HOME")]
    roots.extend(CANN_FIXED_DIRS)
    for root in roots:
        if not root or not os.path.isdir(root):
            continue
        for pattern in CANN_VERSION_FILES:
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                version = read_version_file(path)
                if version:
                    return version
    return None


def visible_devices() -> str | None:
    for name in ("ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"):
        value = os.environ.get(name)
        if value is not None:
            return f"{name}={value}"
    return None


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a ``raise ... from`` / implicit context chain."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    return exc


def load_check(preloaded: bool = False) -> dict:
    """Import torch and torch_npu and read the NPUs; ``preloaded`` (torch imported with
    autoload off) replays the backend loading a fresh ``import torch`` does."""
    result: dict[str, Any] = {"torch_npu_loads": False, "torch_npu_error": None,
                              "npu_count": None, "npu_model": None}
    try:
        import torch  # noqa: F401

        enabled = getattr(torch, "_is_device_backend_autoload_enabled", None)
        if preloaded and enabled is not None and enabled():
            torch._import_device_backends()
        import torch_npu  # noqa: F401
    except BaseException as exc:  # noqa: B036 - report anything, even SystemExit
        cause = root_cause(exc)
        text = (f"{type(cause).__name__}: {cause}").strip().splitlines()
        result["torch_npu_error"] = text[-1] if text else type(cause).__name__
        return result
    result["torch_npu_loads"] = True
    try:
        count = int(torch.npu.device_count())
        result["npu_count"] = count
        if count > 0:
            result["npu_model"] = str(torch.npu.get_device_name(0))
    except Exception as exc:
        lines = str(exc).strip().splitlines()
        result["torch_npu_error"] = f"{type(exc).__name__}: {lines[-1] if lines else ''}"
    return result


def run_load_check(timeout: float, preloaded: bool = False) -> dict:
    """:func:`load_check` in a fork; a crash or hang becomes an error text."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_fd)
            os.dup2(2, 1)  # what the imports print stays off the caller's stdout
            os.environ.pop(AUTOLOAD, None)
            data = (json.dumps(load_check(preloaded)) + "\n").encode("utf-8")
            while data:
                data = data[os.write(write_fd, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    out, deadline = b"", time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(read_fd, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(deadline - time.monotonic()):
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break
                out += chunk
    os.close(read_fd)
    timed_out = time.monotonic() >= deadline and not out.endswith(b"\n")
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        error = f"import torch_npu timed out after {timeout:g}s"
    elif os.WIFSIGNALED(status):
        error = f"import torch_npu was killed by signal {os.WTERMSIG(status)}"
    else:
        try:
            return dict(json.loads(out))
        except ValueError:
            error = f"import torch_npu exited with code {os.WEXITSTATUS(status)}"
    return {"torch_npu_loads": False, "torch_npu_error": error}


def main(argv: list) -> int:
    timeout = 120.0
    if argv[:1] == ["--timeout"]:
        timeout, argv = float(argv[1]), argv[2:]
    wanted = argv[:1] != ["--no-load-check"]
    argv = argv if wanted else argv[1:]
    names = [n for n in list(BASE_DISTS) + list(argv) if n.lower() != "python"]
    packages = {name: dist_version(name) for name in names}
    result = {"platform": platform.platform(), "python": platform.python_version(),
              "packages": packages, "cann": cann_version(), "visible_devices": visible_devices()}
    if packages.get("torch_npu") is not None:  # else the load check's fields stay null
        result.update(run_load_check(timeout) if wanted else {"load_check": "wanted"})
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
