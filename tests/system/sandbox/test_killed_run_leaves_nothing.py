"""SIGKILL of the process running the tests (as of `backport apply`) ends every process the
tests started, those in sessions of their own included, on every path a test runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from backport.codec import encode
from backport.config.model import Environment
from backport.envs.kept import KeepPolicy
from backport.envs.model import Probe
from tests.helpers.processes import wait_none_with, with_marker

from .conftest import needs_namespaces

# The test: a child in a session of its own (out of the test's process group), then a long
# wait; the marker (argv[1]) is in both command lines, so they can be found from outside.
LINGER = """
import subprocess, sys, time
marker = sys.argv[1]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker],
                 start_new_session=True)
open(marker + ".started", "w").close()
time.sleep(600)
"""

# The runner's parent, as `backport apply` is: one test run, until it is killed. It is given
# the interpreter's probe (as a run reuses a stored one), or probes it.
DRIVER = """
import json, sys
from pathlib import Path
from backport.codec import decode
from backport.config.model import Environment, TestSpec
from backport.envs.kept import KeepPolicy
from backport.envs.model import Probe
from backport.envs.probe import probe
from backport.envs.runner import TestRunner
python, worktree, mode, folder, marker, stored = sys.argv[1:7]
env = Environment(name="e", python=Path(python), timeout=600.0)
keep = KeepPolicy(Path(folder), idle=600.0) if mode == "kept" else None
found = decode(Probe, json.loads(stored)) if stored else probe(env)
runner = TestRunner(env, found, device="none", isolated=mode == "isolated", keep=keep)
runner.run(Path(worktree), TestSpec("test/test_linger.py", (marker,)),
           Path(worktree).parent / "linger.log")
"""


def _kill_driver_and_watch(python: Path, tmp_path: Path, mode: str, folder: Path,
                           found: Probe | None = None) -> None:
    worktree = tmp_path / "wt"
    (worktree / "test").mkdir(parents=True)
    (worktree / "test" / "test_linger.py").write_text(LINGER, encoding="utf-8")
    marker = str(tmp_path / f"linger-{uuid.uuid4().hex}")
    stored = json.dumps(encode(found)) if found is not None else ""
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(python), str(worktree), mode,
                               str(folder), marker, stored])
    try:
        deadline = time.monotonic() + 240  # a warm worker imports torch first
        while not Path(marker + ".started").exists():
            assert driver.poll() is None, "the driver ended before its test started"
            assert time.monotonic() < deadline, "the test never started"
            time.sleep(0.05)
        while len(with_marker(marker)) < 2:  # the test and its child in its own session
            assert time.monotonic() < deadline, f"found only {with_marker(marker)}"
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        assert wait_none_with(marker, limit=60.0), f"still running: {with_marker(marker)}"
    finally:
        for pid in with_marker(marker):  # what a failure left behind
            os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def test_isolated_run(plain_env: Environment, tmp_path: Path, kept: KeepPolicy) -> None:
    needs_namespaces()
    _kill_driver_and_watch(Path(sys.executable), tmp_path, "isolated", kept.folder)


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["warm", "kept"])
def test_warm_run(torch_env: Environment, torch_probe: Probe, tmp_path: Path, kept: KeepPolicy,
                  mode: str) -> None:
    needs_namespaces()
    assert torch_env.python is not None
    _kill_driver_and_watch(torch_env.python, tmp_path, mode, kept.folder, torch_probe)
