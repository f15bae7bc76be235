"""A cold run imports torch once per environment: the probe's torch_npu load check is a fork of
the warm worker (whose torch was imported with the backend autoload off), and it reads exactly
what a separate process importing torch with autoload on reads.

The environments are real interpreters (the tool's own, with a small ``torch`` / ``torch_npu``
pair on ``PYTHONPATH`` that loads its backend the way torch >= 2.5 does, and logs every process
that imports it). On the real torch 2.13.0 + torch_npu environment the same comparison is made
by ``test_overlay.py``'s run, which prewarms as a run does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.config.validate import home_as_tilde
from backport.envs import model
from backport.envs.environments import Environments
from backport.envs.probe import probe
from backport.envs.setup import plan_setup, setup_env
from tests.helpers.project import run_app

from .conftest import write

FAKE_TORCH = """
import os

__version__ = "2.13.0"
with open(os.environ["FAKE_TORCH_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")


def _is_device_backend_autoload_enabled():
    return os.getenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1"


def _import_device_backends():
    try:
        import torch_npu
        torch_npu._autoload()
    except Exception as err:
        raise RuntimeError("Failed to load the backend extension: torch_npu.") from err


if _is_device_backend_autoload_enabled():
    _import_device_backends()
"""

NPU_MISSING_LIB = """
raise ImportError("libhccl.so: cannot open shared object file: No such file or directory")
"""

NPU_LOADS = """
import types

import torch

torch.npu = types.SimpleNamespace(device_count=lambda: 2,
                                  get_device_name=lambda index: "Ascend910B4")


def _autoload():
    pass
"""

TEST_FILE = """
import unittest

import torch


class T(unittest.TestCase):
    def test_version(self):
        self.assertEqual(torch.__version__, "2.13.0")


if __name__ == "__main__":
    unittest.main()
"""


def _fake_env(root: Path, npu_source: str) -> tuple[Environment, Path]:
    # In the worktree of _cold_run: all a test of its sandbox reads and writes.
    site = root / "wt" / "site"
    write(site / "torch" / "__init__.py", FAKE_TORCH)
    write(site / "torch_npu" / "__init__.py", npu_source)
    for name in ("torch", "torch_npu"):
        write(site / f"{name}-2.13.0.dist-info" / "METADATA",
              f"Metadata-Version: 2.1\nName: {name}\nVersion: 2.13.0\n")
    log = root / "wt" / "imports.log"
    env = Environment(name="fake-torch", python=Path(sys.executable), timeout=60.0,
                      env={"PYTHONPATH": str(site), "FAKE_TORCH_LOG": str(log)})
    return env, log


def _importers(log: Path) -> set[str]:
    return set(log.read_text().split()) if log.exists() else set()


def _cold_run(tmp_path: Path, env: Environment) -> tuple[model.TestRun, model.Probe]:
    """A run's first steps for ``env``: prewarm, probe, one test; the test's run and the probe."""
    worktree = tmp_path / "wt"
    write(worktree / "test" / "test_x.py", TEST_FILE)
    envs = Environments()
    try:
        envs.prewarm(env, "none")
        found = envs.probe(env)
        run = envs.runner(env, "none").run(worktree, Spec(path="test/test_x.py", args=()),
                                           tmp_path / "x.log")
    finally:
        envs.close()
    return run, found


def test_cold_run_imports_torch_once_per_environment(tmp_path: Path) -> None:
    env, log = _fake_env(tmp_path, NPU_MISSING_LIB)
    run, found = _cold_run(tmp_path, env)
    assert run.ok and run.runner == "warm"
    # One process imported torch: the worker. The load check and the test were its forks.
    assert len(_importers(log)) == 1
    assert found.torch_npu_loads is False
    assert found.torch_npu_error == (
        "ImportError: libhccl.so: cannot open shared object file: No such file or directory")


def test_an_environment_with_a_wrapper_starts_no_warm_worker(tmp_path: Path) -> None:
    """The wrapper starts each test, so no test would fork from a worker: a run starts none
    (it would import torch for nothing); the probe runs its own load check."""
    env, log = _fake_env(tmp_path, NPU_MISSING_LIB)
    wrapper = write(tmp_path / "wrap.sh", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    env = Environment(name=env.name, python=env.python, timeout=env.timeout, env=env.env,
                      wrapper=(str(wrapper),), wrapper_shown=("wrap.sh",))
    run, found = _cold_run(tmp_path, env)
    assert run.ok and run.runner == "isolated"
    # Two processes imported torch: the probe's load check and the test.
    assert len(_importers(log)) == 2
    assert found.torch_npu_loads is False and "libhccl.so" in (found.torch_npu_error or "")


@pytest.mark.parametrize("npu_source", [NPU_MISSING_LIB, NPU_LOADS], ids=["fails", "loads"])
def test_folded_load_check_reads_what_a_separate_process_reads(
    tmp_path: Path, npu_source: str
) -> None:
    env, _log = _fake_env(tmp_path, npu_source)
    envs = Environments()
    try:
        envs.prewarm(env, "none")
        folded = envs.probe(env)
    finally:
        envs.close()
    assert folded == probe(env)


def test_env_setup_reads_the_pins_without_importing_torch(tmp_path: Path) -> None:
    # Setting up (or planning) an environment compares its pins with what is installed: the
    # versions come from the distributions' metadata; no process imports torch for them.
    env, log = _fake_env(tmp_path, NPU_MISSING_LIB)
    pinned = Environment(name=env.name, python=env.python, timeout=env.timeout, env=env.env,
                         expect={"torch": "2.13.0", "torch_npu": "2.13.0"})
    lines: list[str] = []
    setup_env(pinned, log=lines.append, use_uv=False)
    assert lines == [f"fake-torch: {home_as_tilde(str(pinned.interpreter))} is up to date"]
    assert plan_setup(pinned)[1] == []
    assert not log.exists()  # each importing process would have added a line
    # The command says the same, from the same versions, without importing torch either.
    project = tmp_path / "project"
    (project / "patches").mkdir(parents=True)
    (project / "branches.yaml").write_text(yaml.safe_dump({
        "forge": "local", "upstream": "Ascend/pytorch", "fork": "lgxxx/pytorch",
        "upstream_url": "./upstream.git", "fork_url": "./fork.git",
        "environments": {"fake-torch": {"python": str(pinned.python), "env": dict(pinned.env),
                                        "expect": dict(pinned.expect)}},
        "branches": {"master": {"env": "fake-torch"}}}), encoding="utf-8")
    done = run_app(project, "env", "setup", "master")
    assert (done.code, done.out.splitlines()[-1]) == (0, "fake-torch: ok"), done.out + done.err
    assert not log.exists()
    assert probe(pinned).torch_npu_loads is False  # the full probe's check imports it
    assert len(log.read_text().split()) == 1


def test_a_prewarm_that_comes_after_the_run_closed_starts_nothing(tmp_path: Path) -> None:
    # A run that stops early (its fetch failed) closes its environments while its prewarm
    # threads may not have begun: those start nothing, no probe, no warm worker, no runner.
    env, log = _fake_env(tmp_path, NPU_MISSING_LIB)
    envs = Environments()
    envs.close()
    envs.prewarm(env, "none")
    assert not envs._early and not envs._runners
    assert not log.exists()  # no process imported torch
