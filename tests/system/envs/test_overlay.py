"""The installed torch_npu with a branch's Python files laid over it, and tests run against it.

Real parts: the torch 2.13.0 venv's installed torch_npu 2.13.0 (BACKPORT_TEST_PYTHON) and real
processes. That torch_npu cannot be imported as a whole here (no CANN: libhccl.so is missing),
so the test files import its pure-Python submodules through the package's folder as the
interpreter finds it: what they get is what the path puts first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs.environments import Environments
from backport.envs.model import Probe
from backport.envs.overlay import (
    PACKAGE,
    OverlayError,
    build_overlay,
    installed_package,
)
from backport.envs.runner import TestRunner as Runner
from tests.helpers.torch_npu_files import COMPAT, COMPAT_TEST

from .conftest import Probed, write

pytestmark = pytest.mark.torch

PATCHED_COMPAT = b'''import torch


def _parse(version_str: str) -> tuple:
    parts = version_str.split("+")[0].split(".")
    return tuple(int(p) for p in parts[:3])


CURRENT_VERSION: tuple = _parse(torch.__version__)
MIN_SUPPORTED_VERSION: tuple = (2, 13)
'''


@pytest.fixture(scope="module")
def installed(torch_env: Environment) -> Path:
    return installed_package(torch_env)


def test_the_installed_package_is_found_without_importing_it(installed: Path) -> None:
    assert installed.name == PACKAGE
    assert (installed / "_compat" / "version.py").is_file()
    assert (installed / "lib").is_dir()


def test_a_missing_package_is_one_sentence(plain_env: Environment) -> None:
    with pytest.raises(OverlayError, match=r"^torch_npu is not installed in environment 'plain'$"):
        installed_package(plain_env)


def test_the_overlay_holds_the_branch_files_and_links_the_rest(installed: Path,
                                                               tmp_path: Path) -> None:
    files = {COMPAT: PATCHED_COMPAT, "torch_npu/_compat/new_helper.py": b"X = 1\n",
             "torch_npu/_compat/utils.py": None}
    overlay = build_overlay(tmp_path, installed, files)
    assert not overlay.reused
    assert overlay.files == tuple(sorted(files))
    copy = overlay.root / PACKAGE
    assert (copy / "_compat" / "version.py").read_bytes() == PATCHED_COMPAT
    assert not (copy / "_compat" / "version.py").is_symlink()
    assert (copy / "_compat" / "new_helper.py").read_bytes() == b"X = 1\n"
    assert not (copy / "_compat" / "utils.py").exists()  # the series deletes it
    # Everything else is the installed package's: linked, with its libraries.
    assert (copy / "_compat" / "distributed.py").resolve() == (
        installed / "_compat" / "distributed.py").resolve()
    assert (copy / "lib").is_symlink() and (copy / "lib" / "libtorch_npu.so").is_file()
    assert (copy / "__init__.py").is_symlink()
    # The installed bytecode of the replaced files is not carried over.
    assert not (copy / "__pycache__").exists()
    assert not (copy / "_compat" / "__pycache__").exists()
    assert sorted(os.listdir(installed)) == sorted(set(os.listdir(copy)) | {"__pycache__"})


def test_the_overlay_is_built_once_per_run_environment_and_content(torch_env: Environment,
                                                                   installed: Path) -> None:
    envs = Environments()
    try:
        first = envs.overlay(torch_env, {COMPAT: PATCHED_COMPAT})
        stamp = (first.root / PACKAGE / "_compat" / "version.py").stat()
        again = envs.overlay(torch_env, {COMPAT: PATCHED_COMPAT})
        assert not first.reused and again.reused and again.root == first.root
        assert (again.root / PACKAGE / "_compat" / "version.py").stat().st_ino == stamp.st_ino
        other = envs.overlay(torch_env, {COMPAT: PATCHED_COMPAT + b"\n"})
        assert not other.reused and other.root != first.root
        # Nothing half-built is left beside them.
        assert sorted(os.listdir(first.root.parent)) == sorted([first.root.name, other.root.name])
    finally:
        envs.close()
    # The run's copies go with it; the installed package is untouched.
    assert not first.root.parent.exists()
    assert installed.is_dir() and (installed / "_compat" / "version.py").is_file()


def test_a_path_outside_the_package_is_refused(installed: Path, tmp_path: Path) -> None:
    with pytest.raises(OverlayError, match="torch_npu/../x.py is not a file of the torch_npu"):
        build_overlay(tmp_path, installed, {"torch_npu/../x.py": b""})


def test_a_test_run_with_the_overlay_sees_the_patched_module(
        torch_env: Environment, tmp_path: Path, probed: Probed) -> None:
    worktree = tmp_path / "wt"
    write(worktree / "test" / "test_compat_version.py", COMPAT_TEST)
    spec = Spec("test/test_compat_version.py", ("-v",))
    envs = Environments()
    try:
        envs.prewarm(torch_env, "none")  # as a run does: the worker also runs the probe's check
        # The folded load check on the real torch_npu reads what a process of its own reads.
        folded = envs.probe(torch_env)
        assert folded == probed(torch_env)  # probe(torch_env), its check a process of its own
        assert folded.torch_npu_loads is False and "libhccl.so" in (folded.torch_npu_error or "")
        overlay = envs.overlay(torch_env, {COMPAT: PATCHED_COMPAT})
        runner = envs.runner(torch_env, "none")
        assert runner.kind == "warm worker"  # a warm worker serves the runs without an overlay
        released = runner.run(worktree, spec, tmp_path / "released.log")
        patched = runner.run(worktree, spec, tmp_path / "patched.log", overlay=overlay.root)
        assert envs.overlay(torch_env, {COMPAT: PATCHED_COMPAT}).reused
    finally:
        envs.close()
    # The released wheel's _parse drops the patch level; the branch's keeps it.
    assert not released.ok and released.runner == "warm"
    assert "AssertionError: Tuples differ: (2, 13) != (2, 13, 1)" in (
        tmp_path / "released.log").read_text()
    assert patched.ok, (tmp_path / "patched.log").read_text()
    assert patched.runner == "isolated"  # the warm worker may hold the installed modules
    assert patched.command == ("TORCH_DEVICE_BACKEND_AUTOLOAD=0 PYTHONPATH='<torch_npu overlay>' "
                               "python test/test_compat_version.py -v")
    assert str(tmp_path) not in patched.command and str(tmp_path) not in str(patched.env_vars)


SEES_BOTH = """
import unittest

import torch_npu
import {other}


class Path(unittest.TestCase):
    def test_overlay_first_and_the_rest_kept(self):
        self.assertEqual(torch_npu.WHERE, "overlay")
        self.assertEqual({other}.WHERE, "{other}")


if __name__ == "__main__":
    unittest.main()
"""


@pytest.mark.parametrize("pinned", [False, True], ids=["script-path", "map-pinned-path"])
def test_the_overlay_goes_first_on_what_a_source_script_or_the_map_sets(
        tmp_path: Path, pinned: bool) -> None:
    """CANN's set_env.sh extends PYTHONPATH: the overlay goes before it, and nothing it added is
    lost; where the map pins PYTHONPATH (which wins over the script), before that."""
    cann, mapped, overlay = tmp_path / "cann", tmp_path / "mapped", tmp_path / "overlay"
    write(cann / "cann_mod.py", "WHERE = 'cann_mod'\n")
    write(cann / "torch_npu" / "__init__.py", "WHERE = 'installed'\n")
    write(mapped / "map_mod.py", "WHERE = 'map_mod'\n")
    write(overlay / "torch_npu" / "__init__.py", "WHERE = 'overlay'\n")
    script = write(tmp_path / "set_env.sh",
                   f'export PYTHONPATH="{cann}${{PYTHONPATH:+:$PYTHONPATH}}"\n')
    env = Environment(name="sourced", python=Path(sys.executable), source=script,
                      source_shown="~/set_env.sh", timeout=60.0,
                      env={"PYTHONPATH": str(mapped)} if pinned else {})
    other = "map_mod" if pinned else "cann_mod"
    write(tmp_path / "wt" / "test" / "test_path.py", SEES_BOTH.replace("{other}", other))
    spec = Spec("test/test_path.py", ("-v",))
    fake = Probe(env_name="sourced", interpreter="python", platform=None, python=None,
                 packages={}, cann=None, torch_npu_loads=None, torch_npu_error=None,
                 npu_model=None, npu_count=None, visible_devices=None)
    with Runner(env, fake, device="none") as runner:
        run = runner.run(tmp_path / "wt", spec, tmp_path / "path.log", overlay=overlay)
    assert run.ok, (tmp_path / "path.log").read_text()
    shown = "'<torch_npu overlay>:<PYTHONPATH>'" if pinned else "'<torch_npu overlay>'"
    assert run.command == f"source ~/set_env.sh && PYTHONPATH={shown} python test/test_path.py -v"
    assert str(tmp_path) not in str(run.env_vars)
