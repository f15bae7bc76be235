"""Ctrl-C during the demo's tests: the command it prints finishes the sandbox's run."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.processes import popen_interruptible
from tests.helpers.project import TORCH_PYTHON, needs_torch


def _wait_for(condition, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


@needs_torch
def test_the_command_printed_at_ctrl_c_finishes_the_demo_and_pushes(tmp_path: Path) -> None:
    assert TORCH_PYTHON is not None
    root = tmp_path / "sb"
    # The demo's interpreter holds the test step (the first warm worker's start) until the
    # signal is sent, so the interrupt lands mid-run however fast or loaded the machine is;
    # released, that start ends there, as a start cut off by the interrupt (it imports no
    # torch for a run that is gone). Later starts run the torch interpreter.
    started, release = tmp_path / "tests-started", tmp_path / "release"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\ncase \"$*\" in *warm_worker*)\n"
                      f"  if [ ! -e '{started}' ]; then\n    touch '{started}'\n"
                      f"    while [ ! -e '{release}' ]; do sleep 0.05; done\n    exit 1\n"
                      f"  fi;;\nesac\nexec '{TORCH_PYTHON}' \"$@\"\n", encoding="utf-8")
    python.chmod(0o755)
    proc = popen_interruptible([sys.executable, "-m", "backport", "demo", "--dir", str(root),
                                "--python", str(python)], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: started.exists() or proc.poll() is not None)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    lines = err.splitlines()
    said = next(i for i, line in enumerate(lines) if line.startswith("interrupted: "))
    command = lines[said + 1].strip()
    assert command.startswith(f"cd {root / 'project'} && BACKPORT_CACHE={root / 'cache'} "), err
    again = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                           check=False, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    heads = subprocess.run(["git", "--git-dir", str(root / "fork.git"), "for-each-ref",
                            "--format=%(refname:short)", "refs/heads"], capture_output=True,
                           text=True, check=True).stdout.split()
    assert sorted(heads) == sorted(f"test-put-metric-{t}"
                                   for t in ("v2.7.1", "v2.11.0", "v2.12.0", "master"))
