"""A kept warm worker is used only while it is the process this tool started: a record whose
pid now names another process is not trusted, and the run starts a fresh worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs.kept import KeepPolicy, start_time
from backport.envs.model import Probe
from backport.envs.runner import TestRunner as Runner
from tests.helpers.processes import wait_gone

PLAIN = "import unittest\nclass T(unittest.TestCase):\n    def test_a(self): pass\n" \
        "unittest.main()\n"


def _run(env: Environment, found: Probe, kept: KeepPolicy, worktree: Path,
         n: int) -> tuple[int, str]:
    with Runner(env, found, device="none", keep=kept) as runner:
        run = runner.run(worktree, Spec("test/test_plain.py"), worktree.parent / f"{n}.log")
        assert (run.runner, run.ok) == ("warm", True)
        assert runner.worker_pid is not None
        return runner.worker_pid, runner.kind


@pytest.mark.torch
def test_a_reused_pid_is_not_trusted(torch_env: Environment, torch_probe: Probe,
                                     kept: KeepPolicy, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    (worktree / "test").mkdir(parents=True)
    (worktree / "test" / "test_plain.py").write_text(PLAIN, encoding="utf-8")
    first, kind = _run(torch_env, torch_probe, kept, worktree, 1)
    assert "started now" in kind
    [record_file] = kept.folder.glob("w-*.json")
    record = json.loads(record_file.read_text())
    assert record["pid"] == first and record["start"] == start_time(first)
    assert _run(torch_env, torch_probe, kept, worktree, 2)[0] == first  # trusted while it holds
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        # The record now names a pid another process holds (as after the worker ended and its
        # pid was reused): that process started at another time.
        record_file.write_text(json.dumps({**record, "pid": other.pid}))
        second, kind = _run(torch_env, torch_probe, kept, worktree, 3)
        assert second not in (first, other.pid) and "started now" in kind
        assert json.loads(record_file.read_text())["pid"] == second
    finally:
        assert other.stdin is not None
        other.stdin.close()
        other.wait()
        os.kill(first, signal.SIGKILL)  # the worker no run may use any more
        assert wait_gone(first)
