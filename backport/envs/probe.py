"""Probe an environment (``scripts/probe_env.py`` in the sandbox; the tool never imports torch)
and judge it: ``expect:`` pins (:func:`pin_mismatches`), whether a ``device:`` policy's test
may run (:func:`device_verdict`), a test's need of an NPU (:func:`infer_device`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from backport import process
from backport.codec import encode
from backport.config.model import BranchMap, Environment
from backport.config.validate import home_as_tilde
from backport.envs.launch import launch_argv, program_path, shown_command
from backport.envs.model import AUTOLOAD, Probe
from backport.envs.sandbox import sandboxed
from backport.errors import BackportError
from backport.redact import redact

SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
PROBE_SCRIPT = SCRIPTS_DIR / "probe_env.py"
LOAD_CHECK_TIMEOUT = 120.0


def env_vars(env: Environment, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment for code run in ``env``: ours + env.env + ``extra``, no tokens."""
    return {**process.secret_free(os.environ), **env.env, **(extra or {})}


def require_interpreter(env: Environment) -> Path:
    """The interpreter; ``env-missing`` when it, the ``source:`` or the ``wrapper:`` is missing."""
    program = program_path(env)
    for what, path, found, more in (
        ("interpreter", env.interpreter, env.interpreter.exists(), "; run `backport env setup`"),
        ("source script", env.source, env.source is None or env.source.is_file(), ""),
        ("wrapper", program, program is None or os.access(program, os.X_OK),
         " or is not executable"),
    ):
        if not found:
            raise BackportError("env-missing", f"environment '{env.name}': {what} "
                                f"{home_as_tilde(str(path))} does not exist{more}")
    return env.interpreter


def require_built(envs: Mapping[str, Environment], branches: Mapping[str, list[str]]) -> None:
    """Stop before any work when an environment a run needs has no interpreter yet."""
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
    """Platform, Python, versions, CANN and NPU facts of ``env``; ``load_check``: an early
    worker's torch_npu check (None: the probe's own); ``versions_only`` imports no torch."""
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
        data.update(check)
    found = {f.name: data.get(f.name) for f in fields(Probe)}
    error = found["torch_npu_error"]
    found.update(env_name=env.name, interpreter=shown, packages=dict(data.get("packages") or {}),
                 torch_npu_error=redact(error) if error else None)
    return Probe(**found)


def installed_version(probe: Probe, dist: str) -> str | None:
    """The probed version of ``dist`` under any spelling of its name (``python`` too)."""
    wanted = canonicalize_name(dist)
    if wanted == "python":
        return probe.python
    versions = [v for name, v in probe.packages.items() if canonicalize_name(name) == wanted]
    return next((v for v in versions if v is not None), None)


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def version_matches(pin: str, installed: str) -> bool:
    """Equal as PEP 440 versions, the local label (``+cpu``) ignored unless the pin has one."""
    want, have = _version(pin.strip()), _version(installed.strip())
    if want is None or have is None:
        return pin.strip() == installed.strip()
    return want == (have if want.local else Version(have.public))


def python_matches(pin: str, installed: str) -> bool:
    """``3.11`` matches ``3.11.7``; ``3.11.7`` matches only itself."""
    want, have = _version(pin.strip()), _version(installed.strip())
    if want is None or have is None:
        return version_matches(pin, installed)
    if want.public != want.base_version:  # a pre-, post- or dev-release is compared whole
        return want == have
    return have.release[: len(want.release)] == want.release


def pin_mismatches(env: Environment, probe: Probe) -> list[str]:
    """One line per pin not met, e.g. ``torch: expected 2.7.1, found 2.13.0+cpu``."""
    problems = []
    for dist, pin in env.expect.items():
        installed = installed_version(probe, dist)
        matches = python_matches if canonicalize_name(dist) == "python" else version_matches
        if installed is None:
            problems.append(f"{dist}: expected {pin}, not installed")
        elif not matches(pin, installed):
            problems.append(f"{dist}: expected {pin}, found {installed}")
    return problems


_MISSING_LIB = re.compile(r"([\w.+-]+\.so(?:\.[\w.]+)?): cannot open shared object file")


def short_reason(error: str | None) -> str:
    """A few words on why torch_npu does not load, e.g. ``libhccl.so missing``."""
    if not error or not error.strip():
        return "reason unknown"
    match = _MISSING_LIB.search(error)
    if match:
        return f"{match.group(1)} missing"
    text = error.strip().splitlines()[-1]
    return text if len(text) <= 160 else text[:157] + "..."


@dataclass(frozen=True)
class DeviceVerdict:
    """Whether a test may run, the variables it runs with, and the evidence note."""

    runnable: bool
    env: Mapping[str, str]
    note: str

    @property
    def autoload_off(self) -> bool:
        return self.env.get(AUTOLOAD) == "0"


def device_verdict(probe: Probe, device: str) -> DeviceVerdict:
    """What running ``device`` ("none" | "npu") tests in the probed environment means."""
    if probe.torch_npu_loads is None:  # torch_npu not installed
        if device == "npu":
            return DeviceVerdict(False, {}, "torch_npu not installed; device: npu needs a visible NPU")
        return DeviceVerdict(True, {}, "torch_npu not installed; no NPU visible")
    if not probe.torch_npu_loads:
        why = short_reason(probe.torch_npu_error)
        if device == "npu":
            return DeviceVerdict(
                False, {}, f"torch_npu present but not loadable ({why}); no NPU visible")
        note = f"torch_npu present but not loadable ({why}); ran with {AUTOLOAD}=0; no NPU visible"
        return DeviceVerdict(True, {AUTOLOAD: "0"}, note)
    count = probe.npu_count or 0
    visible = f"{count} NPU{'s' if count > 1 else ''} visible" if count > 0 else "no NPU visible"
    if probe.npu_model and count > 0:
        visible += f" ({probe.npu_model})"
    if device == "npu" and not probe.npu_count:
        return DeviceVerdict(
            False, {}, f"torch_npu loaded; {visible}; device: npu needs a visible NPU")
    if probe.visible_devices:
        visible += f" with {probe.visible_devices}"
    return DeviceVerdict(True, {}, f"torch_npu loaded; {visible}")


# What makes a test need an NPU: it imports torch_npu, or puts tensors / modules on "npu".
_NPU_USES = (
    (re.compile(r"^\s*(?:import\s+torch_npu\b|from\s+torch_npu\b)", re.M), "imports torch_npu"),
    (re.compile(r"""device\s*=\s*["']npu\b|torch\.device\(\s*["']npu\b|["']npu:\d+["']"""),
     "creates npu tensors or devices"),
    (re.compile(r"\.npu\(\)|\btorch\.npu\.|\.to\(\s*[\"']npu\b"), "creates npu tensors or devices"),
)


def infer_device(sources: dict[str, str]) -> tuple[str, list[str]]:
    """``("npu", reasons)`` when a test file (path -> text) uses torch_npu, else ``("none", [])``."""
    reasons = []
    for path, text in sources.items():
        found = dict.fromkeys(why for pattern, why in _NPU_USES if pattern.search(text))
        reasons += [f"{path} {why}" for why in found]
    return ("npu" if reasons else "none"), reasons


def probe_rows(bm: BranchMap, envs: list[Environment], *,
               versions_only: bool = False) -> list[dict]:
    """`env probe`'s rows: each environment's branches, options, probe and pins."""
    rows = []
    for env in envs:
        row: dict = {"env": env.name,
                     "branches": [t.name for t in bm.targets.values() if t.env == env.name],
                     "options": {"interpreter": home_as_tilde(str(env.interpreter)),
                                 "requirements": list(env.requirements),
                                 "no_deps": list(env.no_deps),
                                 "extra_index_urls": list(env.extra_index_urls),
                                 "source": env.source_shown or None,
                                 "wrapper": list(env.wrapper_shown) or None,
                                 "starts_as": shown_command(env, ["TEST"], env.env)}}
        rows.append(row)
        try:
            found = probe(env, versions_only=versions_only)
        except BackportError as exc:
            row.update(ok=False, error=exc.message)
            continue
        mismatches = pin_mismatches(env, found)
        row.update(encode(found), ok=not mismatches, pin_mismatches=mismatches)
    return rows
