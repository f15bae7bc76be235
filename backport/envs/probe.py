"""Probe an environment by running ``scripts/probe_env.py`` with its own interpreter.

The tool never imports torch or torch_npu itself; everything is read in a child process.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from backport import process
from backport.config.model import Environment
from backport.config.validate import home_as_tilde
from backport.envs.launch import launch_argv, program_path
from backport.envs.model import AUTOLOAD, Probe
from backport.envs.sandbox import sandboxed
from backport.errors import BackportError
from backport.redact import redact

SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
PROBE_SCRIPT = SCRIPTS_DIR / "probe_env.py"
LOAD_CHECK_TIMEOUT = 120.0


def env_vars(env: Environment, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment for code run in ``env``: ours + env.env + ``extra``, no tokens
    (``process.secret_free``, which every child's start applies again)."""
    result = process.secret_free(os.environ)
    result.update(env.env)
    result.update(extra or {})
    return result


def require_interpreter(env: Environment) -> Path:
    """The environment's interpreter; ``env-missing`` when it, its ``source:`` script or its
    ``wrapper:`` does not exist."""
    interpreter = env.interpreter
    if not interpreter.exists():
        raise BackportError(
            "env-missing",
            f"environment '{env.name}': interpreter {home_as_tilde(str(interpreter))} does not exist; "
            "run `backport env setup`",
        )
    if env.source is not None and not env.source.is_file():
        raise BackportError(
            "env-missing",
            f"environment '{env.name}': source script {home_as_tilde(str(env.source))} does not exist",
        )
    program = program_path(env)
    if program is not None and not os.access(program, os.X_OK):
        raise BackportError(
            "env-missing",
            f"environment '{env.name}': wrapper {home_as_tilde(str(program))} does not exist or is "
            "not executable",
        )
    return interpreter


def require_built(envs: Mapping[str, Environment], branches: Mapping[str, list[str]]) -> None:
    """Stop before any work when an environment a run needs has no interpreter yet.

    ``branches`` maps each environment name to the target branches that use it.
    """
    missing = [env for env in envs.values() if not env.interpreter.exists()]
    if not missing:
        return
    described = ", ".join(
        f"{env.name} for {', '.join(branches.get(env.name, []))} "
        f"({home_as_tilde(str(env.interpreter))} does not exist)"
        for env in missing
    )
    noun = "environment" if len(missing) == 1 else "environments"
    raise BackportError(
        "usage",
        f"the test {noun} {described} {'is' if len(missing) == 1 else 'are'} not built yet; "
        "run `backport env setup` to build them from the package index (or pass --skip-tests)",
    )


LoadCheck = Callable[[], "dict | None"]  # the torch_npu load check run elsewhere; None: not run


def probe(env: Environment, *, timeout: float = LOAD_CHECK_TIMEOUT + 60.0,
          load_check: LoadCheck | None = None, versions_only: bool = False) -> Probe:
    """Read platform, Python, package versions, CANN and NPU facts of ``env``.

    ``load_check``: where the check whether torch_npu loads comes from when torch_npu is
    installed (the warm worker runs it in a fork of itself, see ``EarlyWorker``); when it gives
    None, the probe runs the check in a process of its own, as without it.
    ``versions_only``: no check at all (no process imports torch; ``torch_npu_loads`` and the
    NPU facts stay None), for callers that only compare pins.
    """
    interpreter = require_interpreter(env)
    shown = home_as_tilde(str(interpreter))
    skip = ["--no-load-check"] if load_check is not None or versions_only else []
    args = [str(PROBE_SCRIPT), "--timeout", str(LOAD_CHECK_TIMEOUT), *skip, *env.expect]
    variables = {AUTOLOAD: "0"}
    start = sandboxed(launch_argv(env, args, {**env.env, **variables}))
    done = process.run(start.argv, env=env_vars(env, variables), timeout=timeout,
                       code="env-missing", context=f"environment '{env.name}': ", shown=shown,
                       pass_fds=start.pass_fds)
    if done.timed_out:
        raise BackportError(
            "env-missing", f"environment '{env.name}': probing {shown} timed out after {timeout:g}s")
    lines = done.out.strip().splitlines()
    try:
        data = json.loads(lines[-1])
    except (IndexError, ValueError):
        err = done.err.strip().splitlines()
        reason = err[-1] if err else f"exit code {done.returncode}"
        raise BackportError(
            "env-missing", redact(f"environment '{env.name}': probing {shown} failed: {reason}")
        ) from None
    if data.get("load_check") == "wanted" and not versions_only:
        assert load_check is not None
        check = load_check()
        if check is None:
            return probe(env, timeout=timeout)
        data.update(torch_npu_loads=bool(check.get("loads")), torch_npu_error=check.get("error"),
                    npu_model=check.get("model"), npu_count=check.get("count"))
    error = data.get("torch_npu_error")
    return Probe(
        env_name=env.name,
        interpreter=shown,
        platform=data.get("platform"),
        python=data.get("python"),
        packages=dict(data.get("packages") or {}),
        cann=data.get("cann"),
        torch_npu_loads=data.get("torch_npu_loads"),
        torch_npu_error=redact(error) if error else None,
        npu_model=data.get("npu_model"),
        npu_count=data.get("npu_count"),
        visible_devices=data.get("visible_devices"),
    )
