"""``backport env setup``: build a missing environment from its ``requirements:``.

uv is used when it is on PATH (``uv venv`` + ``uv pip install``), else ``python -m venv`` + pip.
An environment that exists and satisfies its pins is left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from packaging.utils import canonicalize_name

from backport.config.model import Environment
from backport.envs.pins import pin_mismatches
from backport.envs.probe import SECRET_VARS, display_path, probe
from backport.errors import BackportError
from backport.redact import redact

_PYTHON_NAME = re.compile(r"python[0-9.]*")


def venv_dir(env: Environment) -> Path | None:
    """Where ``env``'s venv lives: ``venv:``, or ``<dir>`` of a ``<dir>/bin/python`` interpreter."""
    if env.venv is not None:
        return env.venv
    interpreter = env.interpreter
    if interpreter.parent.name == "bin" and _PYTHON_NAME.fullmatch(interpreter.name):
        return interpreter.parent.parent
    return None


def setup_env(env: Environment, *, log: Callable[[str], None], use_uv: bool | None = None) -> None:
    """Create ``env``'s venv and install its requirements unless it already matches its pins.

    ``use_uv`` None picks uv when it is on PATH. Raises ``env-missing`` when the environment
    cannot be built and ``env-mismatch`` when it still misses its pins afterwards.
    """
    uv = shutil.which("uv") if use_uv is not False else None
    if use_uv and uv is None:
        raise BackportError("env-missing", f"environment '{env.name}': uv is not on PATH")
    interpreter = env.interpreter
    shown = display_path(interpreter)
    target = venv_dir(env)
    if interpreter.exists():
        problems = pin_mismatches(env, probe(env))
        if not problems:
            log(f"{env.name}: {shown} is up to date")
            return
        if target is None or not (target / "pyvenv.cfg").is_file():
            raise BackportError(
                "env-mismatch",
                f"environment '{env.name}': {shown} is not a virtual environment backport may "
                f"change, and {'; '.join(problems)}",
            )
        log(f"{env.name}: {'; '.join(problems)}; reinstalling the requirements")
    else:
        if target is None:
            raise BackportError(
                "env-missing",
                f"environment '{env.name}': interpreter {shown} does not exist and is not "
                "<dir>/bin/python, so there is no venv to create; fix `python:` or use `venv:`",
            )
        if target.exists() and any(target.iterdir()) and not (target / "pyvenv.cfg").is_file():
            raise BackportError(
                "env-missing",
                f"environment '{env.name}': {display_path(target)} exists but is not a "
                "virtual environment; remove it or point `venv:` elsewhere",
            )
        log(f"{env.name}: creating {display_path(target)}")
        _run(env, _create_command(env, target, uv), log)
        if not interpreter.exists():
            raise BackportError(
                "env-missing",
                f"environment '{env.name}': the new venv has no interpreter {shown}",
            )
    if env.requirements:
        _install(env, interpreter, uv, log)
    problems = pin_mismatches(env, probe(env))
    if problems:
        raise BackportError(
            "env-mismatch", f"environment '{env.name}' after setup: {'; '.join(problems)}"
        )
    log(f"{env.name}: ready ({shown})")


def _create_command(env: Environment, target: Path, uv: str | None) -> list[str]:
    python_pin = next((v for k, v in env.expect.items() if canonicalize_name(k) == "python"), None)
    if uv is not None:
        return [uv, "venv", "--python", python_pin or sys.executable, "--", str(target)]
    return [sys.executable, "-m", "venv", str(target)]


def _install(env: Environment, interpreter: Path, uv: str | None, log: Callable) -> None:
    handle, name = tempfile.mkstemp(prefix="backport-requirements-", suffix=".txt")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write("".join(line + "\n" for line in env.requirements))
        if uv is not None:
            argv = [uv, "pip", "install", "--python", str(interpreter), "-r", name]
        else:
            argv = [str(interpreter), "-m", "pip", "install", "--disable-pip-version-check",
                    "-r", name]  # fmt: skip
        log(f"{env.name}: installing {', '.join(env.requirements)}")
        _run(env, argv, log)
    finally:
        os.unlink(name)


def _run(env: Environment, argv: Sequence[str], log: Callable[[str], None]) -> None:
    """Run ``argv``, passing its output to ``log`` line by line; raise when it fails."""
    shown = " ".join([display_path(argv[0]), *argv[1:]])
    log(redact(f"$ {shown}"))
    dropped = ("PYTHONHOME", "VIRTUAL_ENV", *SECRET_VARS)
    environ = {k: v for k, v in os.environ.items() if k not in dropped}
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=environ,
        )
    except OSError as exc:
        raise BackportError(
            "env-missing", f"environment '{env.name}': cannot run {shown}: {exc.strerror}"
        ) from None
    last = ""
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = redact(raw.decode("utf-8", "replace").rstrip())
        if line:
            last = line
            log(f"  {line}")
    code = proc.wait()
    if code != 0:
        raise BackportError(
            "env-missing",
            redact(f"environment '{env.name}': `{shown}` failed with exit code {code}: {last}"),
        )
