"""Which files of a series a branch environment's test run can exercise.

A branch environment runs the *released* torch_npu wheel, not the patched source. The paths
are those of the Ascend/pytorch tree:

- ``test``: under ``test/``; the run takes them from the worktree.
- ``python``: ``torch_npu/**.py`` outside ``torch_npu/csrc/``; the run can see the branch's
  version laid over a copy of the installed package (``envs/overlay.py``).
- ``compiled``: anything the wheel is built or generated from (C/C++/CUDA sources and headers,
  CMake, ``torch_npu/csrc/``, codegen YAML and ``torchnpugen/``, ``third_party/``, ``setup.py``
  and the other build inputs): not in the build that ran.
- ``other``: everything else (docs, CI files, requirements): not exercised by the tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Literal

from backport.envs.model import ChangeScope

Kind = Literal["test", "python", "compiled", "other"]

PACKAGE = "torch_npu"
COMPILED_SUFFIXES = frozenset({
    ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".cu", ".cuh", ".inc", ".inl",
    ".cmake", ".proto", ".s", ".asm",
})
COMPILED_NAMES = frozenset({"CMakeLists.txt", "Makefile", "BUILD", "BUILD.bazel"})
# Top-level folders whose content is compiled into the wheel or generates what is.
COMPILED_TOPS = frozenset({"cmake", "third_party", "torchnpugen", "codegen"})
# Top-level files that build the wheel.
BUILD_FILES = frozenset({"setup.py", "setup.cfg", "pyproject.toml", "build_libtorch_npu.py",
                         "generate_code.sh", "version.txt", ".gitmodules"})
CODEGEN_SUFFIXES = frozenset({".yaml", ".yml"})


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
        if parts[1] == "csrc" or suffix in CODEGEN_SUFFIXES:
            return "compiled"
        if suffix == ".py":
            return "python"
    return "other"


def overlay_paths(paths: Iterable[str]) -> tuple[str, ...]:
    """The paths a test run can see laid over the installed package, sorted."""
    return tuple(sorted({p for p in paths if classify(p) == "python"}))


def scope_of(paths: Iterable[str], *, overlaid: bool = True) -> ChangeScope:
    """The scope of a series changing ``paths``; ``overlaid=False`` when the run could not lay
    the ``torch_npu`` Python files over the installed package (they are then not in the build)."""
    kinds: dict[str, list[str]] = {"test": [], "python": [], "compiled": [], "other": []}
    for path in sorted(set(paths)):
        kinds[classify(path)].append(path)
    python = kinds["python"]
    return ChangeScope(
        overlay=tuple(python) if overlaid else (),
        not_in_build=tuple(sorted(kinds["compiled"] + ([] if overlaid else python))),
        not_exercised=tuple(kinds["other"]),
    )
