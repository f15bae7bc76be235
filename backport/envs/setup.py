"""``backport env setup``: build an environment from its ``requirements:``, and plan it.

uv when on PATH, else ``python -m venv`` + pip; ``requirements`` first, then ``no_deps`` without
their dependencies. An environment that meets its pins is left alone. :func:`plan_setup` says
what it would do and :func:`resolve` what pip would fetch (``--dry-run --report``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from backport import process
from backport.config.model import Environment
from backport.config.validate import home_as_tilde
from backport.envs.probe import pin_mismatches, probe
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
    """Create ``env``'s venv and install its requirements unless it meets its pins;
    ``env-missing`` when it cannot be built, ``env-mismatch`` when it still misses them."""
    def refusal(code: str, text: str) -> BackportError:
        return BackportError(code, f"environment '{env.name}'{text}")

    uv = shutil.which("uv") if use_uv is not False else None
    if use_uv and uv is None:
        raise refusal("env-missing", ": uv is not on PATH")
    interpreter = env.interpreter
    shown = home_as_tilde(str(interpreter))
    target = venv_dir(env)
    if interpreter.exists():
        problems = pin_mismatches(env, probe(env, versions_only=True))
        if not problems:
            log(f"{env.name}: {shown} is up to date")
            return
        if target is None or not (target / "pyvenv.cfg").is_file():
            raise refusal("env-mismatch", f": {shown} is not a virtual environment backport may "
                                          f"change, and {'; '.join(problems)}")
        log(f"{env.name}: {'; '.join(problems)}; reinstalling the requirements")
    else:
        if target is None:
            raise refusal("env-missing", f": interpreter {shown} does not exist and is not "
                          "<dir>/bin/python, so there is no venv to create; fix `python:` or use "
                          "`venv:`")
        if target.exists() and any(target.iterdir()) and not (target / "pyvenv.cfg").is_file():
            raise refusal("env-missing", f": {home_as_tilde(str(target))} exists but is not a "
                          "virtual environment; remove it or point `venv:` elsewhere")
        log(f"{env.name}: creating {home_as_tilde(str(target))}")
        if uv is None:
            create = [sys.executable, "-m", "venv", str(target)]
        else:
            pin = next((v for k, v in env.expect.items() if canonicalize_name(k) == "python"), None)
            create = [uv, "venv", "--python", pin or sys.executable, "--", str(target)]
        _run(env, create, log)
        if not interpreter.exists():
            raise refusal("env-missing", f": the new venv has no interpreter {shown}")
    if env.requirements or env.no_deps:
        _install(env, interpreter, uv, log)
    problems = pin_mismatches(env, probe(env, versions_only=True))
    if problems:
        raise refusal("env-mismatch", f" after setup: {'; '.join(problems)}")
    log(f"{env.name}: ready ({shown})")


def plan_setup(env: Environment, note: Callable[[str], None] = lambda _line: None
               ) -> tuple[str, list[Planned]]:
    """What :func:`setup_env` would do for ``env``: a sentence and the distributions to fetch."""
    interpreter = env.interpreter
    target = venv_dir(env)
    if interpreter.exists():
        try:
            problems = pin_mismatches(env, probe(env, versions_only=True))
        except BackportError as exc:
            problems = [exc.message]
        if not problems:
            return f"{home_as_tilde(str(interpreter))} is up to date; nothing to install", []
        action = f"{'; '.join(problems)}; would reinstall the requirements"
    elif target is None:
        return (f"interpreter {home_as_tilde(str(interpreter))} does not exist and is not "
                "<dir>/bin/python; nothing env setup can build"), []  # fmt: skip
    else:
        action = f"would create the venv {home_as_tilde(str(target))} and install"
    if not (env.requirements or env.no_deps):
        return f"{action} nothing (no requirements)", []
    note(f"{env.name}: resolving {', '.join([*env.requirements, *env.no_deps])} with pip's "
         "dry run …")
    started = time.monotonic()
    plan = resolve(env)
    note(f"{env.name}: resolved in {time.monotonic() - started:.0f} s")
    return action + ":", plan


def _install(env: Environment, interpreter: Path, uv: str | None, log: Callable) -> None:
    if uv is not None:
        base = [uv, "pip", "install", "--python", str(interpreter)]
    else:
        base = [str(interpreter), "-m", "pip", "install", "--disable-pip-version-check",
                "--progress-bar", "off"]  # fmt: skip
    base += [a for url in env.extra_index_urls for a in ("--extra-index-url", url)]
    for lines, options, how in ((env.requirements, [], ""),
                                (env.no_deps, ["--no-deps"], " without their dependencies")):
        if lines:
            with _requirements_file(lines) as name:
                log(f"{env.name}: installing {', '.join(lines)}{how}")
                _run(env, [*base, *options, "-r", name], log)


@contextmanager
def _requirements_file(lines: Sequence[str]) -> Iterator[str]:
    """A temporary requirements file, so no requirement is read as an option."""
    handle, name = tempfile.mkstemp(prefix="backport-requirements-", suffix=".txt")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write("".join(line + "\n" for line in lines))
        yield name
    finally:
        os.unlink(name)


# pip with `platform_machine` markers evaluated for another machine (--platform does not).
_FOREIGN_PIP = (
    "import platform, runpy, sys; machine = sys.argv.pop(1); "
    "platform.machine = lambda: machine; sys.argv[0] = 'pip'; "
    "runpy.run_module('pip', run_name='__main__', alter_sys=True)"
)


@dataclass(frozen=True)
class Planned:
    """One distribution an installation would fetch."""

    name: str
    version: str
    url: str
    size: int | None  # bytes to download, None when the server does not say
    no_deps: bool
    requires: tuple[str, ...]  # its Requires-Dist lines

    @property
    def source(self) -> str:
        """The host (or ``local file``) it comes from."""
        parts = urllib.parse.urlsplit(self.url)
        return parts.hostname or ("local file" if parts.scheme == "file" else self.url)


def resolve(env: Environment, *, platform: str | None = None, python_version: str | None = None,
            sizes: bool = True, with_deps: bool = True) -> list[Planned]:
    """What ``env setup`` would install, from pip's dry run, for another machine with
    ``platform`` (a wheel tag) or ``python_version``; ``env-missing`` when pip cannot resolve."""
    plan: list[Planned] = []
    for lines, no_deps in ((env.requirements, False), (env.no_deps, True)):
        if not lines:
            continue
        found = _pip_resolution(env, lines, no_deps or not with_deps, platform, python_version)
        for item in found:
            meta = item.get("metadata") or {}
            plan.append(Planned(
                name=str(meta.get("name", "?")),
                version=str(meta.get("version", "?")),
                url=str((item.get("download_info") or {}).get("url", "")),
                size=None,
                no_deps=no_deps,
                requires=tuple(meta.get("requires_dist") or ()),
            ))  # fmt: skip
    if sizes and plan:
        with ThreadPoolExecutor(max_workers=8) as pool:
            lengths = list(pool.map(_download_size, [p.url for p in plan]))
        plan = [replace(p, size=n) for p, n in zip(plan, lengths, strict=True)]
    return plan


def _pip_resolution(env: Environment, lines: Sequence[str], no_deps: bool, platform: str | None,
                    python_version: str | None, timeout: float = 900.0) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="backport-resolve-") as tmp, \
            _requirements_file(lines) as name:  # fmt: skip
        report = Path(tmp) / "report.json"
        pip = [sys.executable, "-m", "pip"]
        if platform:  # pip evaluates markers for this machine; make them the target's
            pip = [sys.executable, "-c", _FOREIGN_PIP, platform_machine(platform)]
        argv = [*pip, "install", "--dry-run", "--ignore-installed",
                "--disable-pip-version-check", "--quiet", "--report", str(report)]  # fmt: skip
        argv += [a for url in env.extra_index_urls for a in ("--extra-index-url", url)]
        if no_deps:
            argv.append("--no-deps")
        if platform or python_version:
            argv += ["--only-binary=:all:", "--target", str(Path(tmp) / "target")]
            for tag in compatible_platforms(platform) if platform else ():
                argv += ["--platform", tag]
            argv += ["--python-version", python_version] if python_version else []
        argv += ["-r", name]
        done = process.run(argv, env=_installer_environ(), timeout=timeout, code="env-missing",
                           context=f"environment '{env.name}': ")
        if done.timed_out:
            raise BackportError("env-missing", f"environment '{env.name}': resolving "
                                f"{', '.join(lines)} took over {timeout:g}s")  # fmt: skip
        if not done.ok or not report.is_file():
            err = [ln for ln in done.err.splitlines()
                   if ln.strip() and "is ignored: it is neither a file nor a directory" not in ln]
            reason = err[-1].strip() if err else f"exit code {done.returncode}"
            raise BackportError("env-missing", redact(
                f"environment '{env.name}': pip cannot resolve {', '.join(lines)}"
                f"{' for ' + platform if platform else ''}: {reason}"))  # fmt: skip
        return list(json.loads(report.read_text(encoding="utf-8")).get("install") or [])


def platform_machine(tag: str) -> str:
    """The machine of a wheel platform tag: ``manylinux_2_28_aarch64`` -> ``aarch64``."""
    if tag.startswith(("manylinux_", "musllinux_")) and tag.count("_") >= 3:
        return tag.split("_", 3)[3]
    return tag.split("_", 1)[-1]


def compatible_platforms(tag: str) -> list[str]:
    """``tag`` and the older manylinux tags its machine also installs."""
    match = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", tag)
    if not match:
        return [tag]
    glibc, arch = int(match.group(1)), match.group(2)
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(glibc, 16, -1)]
    return [*tags, f"manylinux2014_{arch}"] if glibc >= 17 else tags


def _download_size(url: str) -> int | None:
    import requests

    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        try:
            return os.path.getsize(urllib.parse.unquote(parts.path))
        except OSError:
            return None
    try:
        head = requests.head(url, allow_redirects=True, timeout=15)
        length = head.headers.get("Content-Length")
        return int(length) if head.ok and length else None
    except (requests.RequestException, ValueError):
        return None


def human_size(size: float) -> str:
    for unit in ("B", "kB", "MB"):
        if size < 1000:
            return f"{size:.1f} MB" if unit == "MB" else f"{size:.0f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def _installer_environ() -> dict[str, str]:
    """What pip or uv runs with: no token (``process.secret_free``), no other Python's venv."""
    return {k: v for k, v in process.secret_free(os.environ).items()
            if k not in ("PYTHONHOME", "VIRTUAL_ENV")}


def _run(env: Environment, argv: Sequence[str], log: Callable[[str], None]) -> None:
    """Run ``argv``, its output to ``log`` line by line; raise when it fails."""
    shown = " ".join([home_as_tilde(str(argv[0])), *argv[1:]])
    log(redact(f"$ {shown}"))
    started = time.monotonic()
    proc = process.spawn(argv, env=_installer_environ(), stderr=process.STDOUT,
                         code="env-missing", context=f"environment '{env.name}': ", shown=shown)
    last = ""
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            line = redact(raw.decode("utf-8", "replace").rstrip())
            if line:
                last = line
                log(f"  {line}")
    except BaseException:  # an interrupt: pip's whole group goes with it
        process.kill_group(proc.pid)
        raise
    finally:
        proc.stdout.close()
    code = proc.wait()
    log(f"  ({time.monotonic() - started:.0f}s)")
    if code != 0:
        raise BackportError(
            "env-missing",
            redact(f"environment '{env.name}': `{shown}` failed with exit code {code}: {last}"),
        )


def plan_lines(env: Environment, note: Callable[[str], None]) -> list[str]:
    """`env setup --dry-run`'s lines: each distribution, its size and source, the total."""
    action, plan = plan_setup(env, note)
    lines = [f"{env.name}: {action}"]
    if not plan:
        return lines
    width = max(len(f"{p.name} {p.version}") for p in plan)
    for item in plan:
        size = human_size(item.size) if item.size is not None else "size unknown"
        unmet = f"  without dependencies{_unmet_note(item, plan)}" if item.no_deps else ""
        lines.append(f"  {f'{item.name} {item.version}':<{width}}  {size:>9}  {item.source}"
                     f"{unmet}")
    known = [p.size for p in plan if p.size is not None]
    unknown = f" ({len(plan) - len(known)} of unknown size)" if len(known) < len(plan) else ""
    lines.append(f"  {len(plan)} distribution{'' if len(plan) == 1 else 's'}, about "
                 f"{human_size(sum(known))} to download{unknown}")
    return lines


def _unmet_note(item: Planned, plan: list[Planned]) -> str:
    versions = {canonicalize_name(p.name): p.version for p in plan}
    unmet = []
    for line in item.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        have = versions.get(canonicalize_name(req.name))
        if have is not None and not req.specifier.contains(have, prereleases=True):
            unmet.append(f"it asks for {req}, installed next to {req.name} {have}")
    return f" ({'; '.join(unmet)})" if unmet else ""
