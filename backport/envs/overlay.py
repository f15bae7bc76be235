"""What a series changes beyond its tests, and the installed torch_npu with its Python files.

Each path of a series is (:func:`classify`) ``test``, ``python`` (``torch_npu/**.py`` outside
``csrc/``: laid over a copy of the installed wheel), ``compiled`` (not in the build that ran) or
``other`` (docs, CI). The overlay (:func:`build_overlay`) goes first on the test's path: the
branch's files, links to the installed package for the rest (never its ``__pycache__``); such a
test always runs as a process of its own (a warm worker cannot unimport).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from backport import process
from backport.config.model import Environment
from backport.envs.launch import launch_argv
from backport.envs.model import ChangeScope
from backport.envs.probe import env_vars
from backport.envs.sandbox import sandboxed
from backport.errors import BackportError

PACKAGE = "torch_npu"
Kind = Literal["test", "python", "compiled", "other"]

COMPILED_SUFFIXES = frozenset({
    ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".cu", ".cuh", ".inc", ".inl",
    ".cmake", ".proto", ".s", ".asm",
})
COMPILED_NAMES = frozenset({"CMakeLists.txt", "Makefile", "BUILD", "BUILD.bazel"})
COMPILED_TOPS = frozenset({"cmake", "third_party", "torchnpugen", "codegen"})
# Top-level files that build the wheel.
BUILD_FILES = frozenset({"setup.py", "setup.cfg", "pyproject.toml", "build_libtorch_npu.py",
                         "generate_code.sh", "version.txt", ".gitmodules"})


def classify(path: str) -> Kind:
    """The kind of one repository path (``/``-separated, relative to the tree's root)."""
    parts = PurePosixPath(path.strip().lstrip("/")).parts
    if not parts:
        return "other"
    name = parts[-1]
    suffix = PurePosixPath(name).suffix.lower()
    if parts[0] == "test":
        return "test"
    if (suffix in COMPILED_SUFFIXES or name in COMPILED_NAMES or parts[0] in COMPILED_TOPS
            or (len(parts) == 1 and name in BUILD_FILES)):
        return "compiled"
    if parts[0] == PACKAGE and len(parts) > 1:
        if parts[1] == "csrc" or suffix in (".yaml", ".yml"):  # codegen input
            return "compiled"
        if suffix == ".py":
            return "python"
    return "other"


def overlay_paths(paths: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({p for p in paths if classify(p) == "python"}))


def scope_of(paths: Iterable[str], *, overlaid: bool = True) -> ChangeScope:
    """The scope of a series changing ``paths`` (``overlaid=False``: Python files not in the build)."""
    kinds: dict[str, list[str]] = {"test": [], "python": [], "compiled": [], "other": []}
    for path in sorted(set(paths)):
        kinds[classify(path)].append(path)
    python = kinds["python"]
    return ChangeScope(
        overlay=tuple(python) if overlaid else (),
        not_in_build=tuple(sorted(kinds["compiled"] + ([] if overlaid else python))),
        not_exercised=tuple(kinds["other"]),
    )


FIND_TIMEOUT = 60.0
# Where the interpreter would import the package from, without importing it.
_FIND = ("import importlib.util, json, sys; s = importlib.util.find_spec(sys.argv[1]); "
         "print(json.dumps(list(s.submodule_search_locations or []) if s else []))")


class OverlayError(Exception):
    """The installed package cannot be found or copied."""


@dataclass(frozen=True)
class Overlay:
    """A copy of the installed package; ``root`` goes first on the test's ``PYTHONPATH``."""

    root: Path  # holds the ``torch_npu`` folder
    files: tuple[str, ...]  # the repository paths laid over the installed package
    reused: bool  # another branch of the run built it


def installed_package(env: Environment, name: str = PACKAGE) -> Path:
    """The folder ``env``'s interpreter imports package ``name`` from (nothing is imported)."""
    with tempfile.TemporaryDirectory(prefix="backport-find-") as empty:  # no package in cwd
        try:
            start = sandboxed(launch_argv(env, ["-c", _FIND, name], env.env))
            proc = process.run(start.argv, cwd=empty, env=env_vars(env), timeout=FIND_TIMEOUT,
                               pass_fds=start.pass_fds)
        except BackportError as exc:
            raise OverlayError(f"cannot ask environment '{env.name}' where {name} is: "
                               f"{exc.message}") from None
    if proc.timed_out:
        raise OverlayError(f"cannot ask environment '{env.name}' where {name} is: no answer "
                           f"within {FIND_TIMEOUT:g} s")
    try:
        found = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        found = None
    if not found or not isinstance(found, list) or not Path(str(found[0])).is_dir():
        raise OverlayError(f"{name} is not installed in environment '{env.name}'")
    return Path(str(found[0]))


def build_overlay(parent: Path, package: Path, files: Mapping[str, bytes | None]) -> Overlay:
    """A copy of ``package`` under ``parent`` holding ``files`` (None: deleted)."""
    inside = {_inside(path): data for path, data in files.items()}
    root = Path(tempfile.mkdtemp(prefix="overlay-", dir=parent))
    try:
        _mirror(package, root / PACKAGE, inside)
    except OSError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise OverlayError(f"cannot copy {package}: {exc.strerror or exc}") from None
    return Overlay(root=root, files=tuple(sorted(files)), reused=False)


def _inside(path: str) -> tuple[str, ...]:
    """``torch_npu/a/b.py`` as parts inside the package: ``("a", "b.py")``."""
    parts = tuple(p for p in path.strip("/").split("/") if p)
    if len(parts) < 2 or parts[0] != PACKAGE or ".." in parts:
        raise OverlayError(f"{path} is not a file of the {PACKAGE} package")
    return parts[1:]


def _mirror(source: Path, target: Path, files: Mapping[tuple[str, ...], bytes | None]) -> None:
    """``target`` as ``source`` with ``files`` (parts relative to it) replaced or left out."""
    target.mkdir(parents=True)
    here = {parts[0] for parts in files}
    names = sorted(os.listdir(source)) if source.is_dir() else []
    for name in names:
        if name == "__pycache__" or name in here:
            continue
        os.symlink(source / name, target / name)
    for name in sorted(here):
        data = files.get((name,))
        deeper = {parts[1:]: content for parts, content in files.items()
                  if parts[0] == name and len(parts) > 1}
        if deeper:
            _mirror(source / name, target / name, deeper)
        elif data is not None:
            (target / name).write_bytes(data)
