"""A run's process killed with SIGKILL mid-test: the driver (the runner's parent, as
`backport apply` is) and a test that lingers, with a child in a session of its own, until the
driver is killed; then nothing the test started may be left running, nor the warm worker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from backport.codec import encode
from backport.envs.model import Probe
from tests.helpers.processes import wait_gone, wait_none_with, with_marker

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

# The runner's parent: the tests it is given first (each one's result noted in a file), then
# the lingering one, until it is killed. It is given the interpreter's probe (read once for the
# test session), or probes it; and the worktree folder its run allows writes in, if any.
DRIVER = """
import json, sys
from pathlib import Path
from backport.codec import decode
from backport.config.model import Environment, TestSpec
from backport.envs import sandbox
from backport.envs.model import Probe
from backport.envs.probe import probe
from backport.envs.runner import TestRunner
python, worktree, mode, marker, stored, first, allow, results = sys.argv[1:9]
if allow:
    sandbox.allow_writes([Path(allow)])
env = Environment(name="e", python=Path(python), timeout=600.0)
found = decode(Probe, json.loads(stored)) if stored else probe(env)
runner = TestRunner(env, found, device="none", isolated=mode == "isolated")
done = []
for step in json.loads(first):
    run = runner.run(Path(step["worktree"]), TestSpec(step["path"], tuple(step["args"])),
                     Path(step["log"]))
    done.append({"runner": run.runner, "isolation": run.isolation,
                 "exit_code": run.exit_code, "log": run.log})
Path(results).write_text(json.dumps({"done": done, "worker": runner.worker_pid}))
runner.run(Path(worktree), TestSpec("test/test_linger.py", (marker,)),
           Path(worktree).parent / "linger.log")
"""


def sigkill_when_lingering(proc: subprocess.Popen, marker: str, what: str) -> None:
    """Once the lingering test of ``marker`` and its child (in a session of its own) run,
    SIGKILL ``proc`` (``what`` names it) and assert that both end; what a failure leaves
    running is killed."""
    try:
        deadline = time.monotonic() + 240  # a warm worker imports torch first
        while not Path(marker + ".started").exists():
            assert proc.poll() is None, f"{what} ended before its test started"
            assert time.monotonic() < deadline, "the test never started"
            time.sleep(0.05)
        while len(with_marker(marker)) < 2:  # the test and its child in its own session
            assert time.monotonic() < deadline, f"found only {with_marker(marker)}"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert wait_none_with(marker, limit=60.0), f"still running: {with_marker(marker)}"
    finally:
        for pid in with_marker(marker):  # what a failure left behind
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def kill_driver_and_watch(python: Path, tmp_path: Path, mode: str,
                          found: Probe | None = None, first: list[dict] | None = None,
                          allow: Path | None = None) -> list[dict]:
    """Run the driver (``mode``: isolated or warm), kill it with SIGKILL once its lingering
    test and that test's child run, and assert that both end, and its warm worker too;
    returns the results of the ``first`` tests (``worktree``, ``path``, ``args``, ``log``
    each) it ran before (``runner``, ``isolation``, ``exit_code``, ``log`` each)."""
    worktree = tmp_path / "wt"
    (worktree / "test").mkdir(parents=True)
    (worktree / "test" / "test_linger.py").write_text(LINGER, encoding="utf-8")
    marker = str(worktree / f"linger-{uuid.uuid4().hex}")  # the test writes only its worktree
    stored = json.dumps(encode(found)) if found is not None else ""
    results = tmp_path / "first-results.json"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(python), str(worktree), mode,
                               marker, stored, json.dumps(first or []), str(allow or ""),
                               str(results)])
    sigkill_when_lingering(driver, marker, "the driver")
    noted = json.loads(results.read_text(encoding="utf-8"))
    if noted["worker"] is not None:  # the worker (its sandbox's launcher) ends with the run
        assert wait_gone(int(noted["worker"])), f"warm worker {noted['worker']} outlived the run"
    return list(noted["done"])
