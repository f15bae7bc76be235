"""How an environment's Python is started, and that start as a reviewer can paste it.

Every child (probe, warm worker, test) starts alike: bash sources the ``source:`` script (its
output to stderr), then the ``wrapper:`` runs (``{python}`` replaced), or the interpreter.
:func:`shown_command` shows it as written in branches.yaml; a variable set to a local path
shows as a placeholder (``PYTHONPATH='<PYTHONPATH>'``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from backport.config.branch_map import PYTHON_PLACEHOLDER
from backport.config.model import Environment

# Read by the snippet below: a folder put first on PYTHONPATH as the sourced script left it.
PATH_FIRST = "BACKPORT_PATH_FIRST"
# $1 is the script, the rest the command; the script sees no "$@", our variables apply after it.
_SOURCE_SNIPPET = (
    '__backport_script=$1; shift; __backport_argv=("$@"); set --; '
    '. "$__backport_script" >&2 || exit; '
    f'if [ -n "${{{PATH_FIRST}:-}}" ]; then '
    f'export PYTHONPATH="${PATH_FIRST}${{PYTHONPATH:+:$PYTHONPATH}}"; fi; unset {PATH_FIRST}; '
    'exec "${__backport_argv[@]}"'
)


def launch_argv(
    env: Environment, args: Sequence[str], variables: Mapping[str, str] | None = None
) -> list[str]:
    """The argv that runs ``python <args>`` in ``env`` (``variables`` re-applied after source)."""
    argv = [*_program(env), *args]
    if env.source is None:
        return argv
    pinned = [f"{k}={v}" for k, v in (variables or {}).items()]
    tail = ["env", *pinned, *argv] if pinned else argv
    return ["bash", "-c", _SOURCE_SNIPPET, "backport-source", str(env.source), *tail]


def script_args(path: str, args: Sequence[str] = ()) -> list[str]:
    """``python``'s arguments for script ``path`` (``./-…`` so no path is read as an option)."""
    return [f"./{path}" if path.startswith("-") else path, *args]


def shown_command(env: Environment, args: Sequence[str], variables: Mapping[str, str]) -> str:
    """``[source S &&] [K=V ...] <wrapper or python> <args>``, pasteable in bash."""
    parts: list[str] = []
    if env.source is not None:
        parts += ["source", _quote(env.source_shown), "&&"]
    for k, v in variables.items():
        local = local_path(env.env.get(k)) and local_path(v)
        parts.append(f"{k}={shlex.quote(placeholder(k) if local else v)}")
    parts += ["python" if item == PYTHON_PLACEHOLDER else _quote(item)
              for item in env.wrapper_shown or [PYTHON_PLACEHOLDER]]
    parts += [shlex.quote(a) for a in args]
    return " ".join(parts)


def placeholder(name: str) -> str:
    return f"<{name}>"


def local_path(value: str | None) -> bool:
    """True when a value (or an item of a ``:`` list) is a local path: absolute, ``~``, ``$HOME``."""
    if not value:
        return False
    return any(part.startswith(("/", "~", "$HOME", "${HOME}"))
               for part in value.split(os.pathsep))


def _program(env: Environment) -> list[str]:
    interpreter = str(env.interpreter)
    return [interpreter if item == PYTHON_PLACEHOLDER else item
            for item in env.wrapper or [PYTHON_PLACEHOLDER]]


def _quote(text: str) -> str:
    """Quote for bash but keep a leading ``~/`` unquoted."""
    if text.startswith("~/"):
        return "~/" + shlex.quote(text[2:])
    return shlex.quote(text)


def program_path(env: Environment) -> Path | None:
    """The file the start depends on besides the interpreter (the wrapper), if it is a path."""
    return Path(env.wrapper[0]) if env.wrapper and "/" in env.wrapper[0] else None
