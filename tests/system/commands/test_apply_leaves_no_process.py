"""Nothing of a `backport apply` run outlives it: its warm worker and every test it forked end
with the run, when it ends and when it is killed with SIGKILL; and no two runs share a worker.

Each run is started under a child subreaper (``WATCH``): a process of the run that outlives it
becomes the subreaper's child, so what is left is found whatever session or group it is in."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backport.envs import sandbox as sandbox_module
from tests.helpers.plain_patch import add_plain_patch_set
from tests.helpers.project import needs_torch

pytestmark = needs_torch
API = "where_torch"
BRANCH = "v2.7.1"

# Runs argv[2:] as its child, waits for it, then up to a minute for what the child left
# (now its own children); writes the exit status and the command lines still running to
# argv[1], and kills them.
WATCH = r"""
import ctypes, json, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
with open(report + ".pid", "w") as out:
    out.write(str(pid))
_, status = os.waitpid(pid, 0)

def children():
    found = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/children") as handle:
            found += [int(p) for p in handle.read().split()]
    return found

deadline = time.monotonic() + 60
while children() and time.monotonic() < deadline:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    time.sleep(0.05)
left = {}
for child in children():
    try:
        with open(f"/proc/{child}/cmdline", "rb") as handle:
            left[child] = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        os.kill(child, 9)
    except OSError:
        pass
with open(report, "w") as out:
    json.dump({"status": status, "left": left}, out)
"""

# Says which PID namespace it runs in (a run's worker and its forks have one of their own), by
# its id and its init's start time: two namespaces one after the other may get the same id;
# with HOLD_TEST set, marks its worktree and waits to be killed.
TEST_TEXT = '''\
import os
import time
import unittest

import torch


class Where(unittest.TestCase):
    def test_where(self):
        # the namespace's id, and when its init started (the kernel reuses a freed id)
        init = open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19]
        print("pid namespace:", os.readlink("/proc/self/ns/pid") + "@" + init, flush=True)
        if os.environ.get("HOLD_TEST"):
            open("held", "w").close()
            time.sleep(600)
        self.assertEqual(torch.ones(2).sum().item(), 2.0)


if __name__ == "__main__":
    unittest.main()
'''


def _start(project: Path, tmp_path: Path, tag: str, *args: str,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Path]:
    report = tmp_path / f"{tag}.json"
    argv = [sys.executable, "-c", WATCH, str(report), sys.executable, "-m", "backport", "apply",
            "--api", API, "--branch", BRANCH, "--no-push", *args]
    with open(tmp_path / f"{tag}.out", "w") as out:
        proc = subprocess.Popen(argv, cwd=project, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})
    return proc, report


def _finished(proc: subprocess.Popen, report: Path) -> dict:
    proc.wait(timeout=900)
    return dict(json.loads(report.read_text(encoding="utf-8")))


def _namespace(project: Path) -> str:
    log = project / ".backport" / "runs" / API / "logs" / f"{BRANCH}.log"
    (found,) = re.findall(r"pid namespace: (\S+)", log.read_text(encoding="utf-8"))
    journal = json.loads((log.parent.parent / "journal.json").read_text(encoding="utf-8"))
    assert journal["branches"][BRANCH]["test"]["runner"] == "warm"  # a fork of the worker
    return found


@pytest.fixture
def project(sandbox, tmp_path: Path) -> Path:
    sandbox_module.forget()
    if not sandbox_module.isolation().isolated:
        pytest.skip(f"this host refuses PID namespaces: {sandbox_module.isolation().why}")
    add_plain_patch_set(sandbox, tmp_path, API, [BRANCH], TEST_TEXT)
    return Path(sandbox.project)


def test_two_runs_each_end_their_own_worker_and_share_none(project: Path,
                                                           tmp_path: Path) -> None:
    seen = []
    for tag, extra in (("first", ()), ("second", ("--force",))):
        done = _finished(*_start(project, tmp_path, tag, *extra))
        out = (tmp_path / f"{tag}.out").read_text(encoding="utf-8")
        assert done["status"] == 0, out
        assert done["left"] == {}, f"the {tag} run left these running: {done['left']}"
        seen.append(_namespace(project))
    assert seen[0] != seen[1], "the second run's test forked from the first run's worker"


def test_a_run_killed_with_sigkill_leaves_nothing_running(project: Path,
                                                          tmp_path: Path) -> None:
    proc, report = _start(project, tmp_path, "killed", env={"HOLD_TEST": "1"})
    held = project / ".backport" / "worktrees" / API / BRANCH / "held"
    try:
        deadline = time.monotonic() + 600  # the worker imports torch first
        while not held.exists():
            assert proc.poll() is None, (tmp_path / "killed.out").read_text(encoding="utf-8")
            assert time.monotonic() < deadline, "the test never started"
            time.sleep(0.05)
        os.kill(int((tmp_path / "killed.json.pid").read_text(encoding="utf-8")), signal.SIGKILL)
        done = _finished(proc, report)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert os.WIFSIGNALED(done["status"]) and os.WTERMSIG(done["status"]) == signal.SIGKILL
    assert done["left"] == {}, f"the killed run left these running: {done['left']}"
