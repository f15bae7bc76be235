"""Two `backport -v apply` runs: the second reuses the first one's probe and warm worker.

The runs and the stop whose output the test reads are CLI processes; the run without kept
workers and the second stop run in this process (`run_app`: the same entry point)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from backport.envs.kept import stop_kept_workers
from tests.helpers.plain_patch import add_plain_patch_set
from tests.helpers.processes import wait_gone
from tests.helpers.project import needs_torch, run_app, run_cli

pytestmark = needs_torch
KEPT = re.compile(r"warm worker, kept, pid (\d+), (started now|kept from an earlier run)")
BRANCH_KIND = re.compile(r"\[(\S+)\] testing: \S+ finished in [\d.]+s \(warm worker, kept, "
                         r"pid (\d+), ([^)]*)\)")


def test_a_second_run_reuses_the_probe_and_the_kept_worker(sandbox, tmp_path: Path) -> None:
    # The runs' test is a plain one over torch: what it imports is not the subject (plain_patch).
    add_plain_patch_set(sandbox, tmp_path, "plain_torch", ["v2.7.1", "v2.11.0"])
    folder = Path(tempfile.mkdtemp(prefix="bpk-"))  # short: a socket path has a length limit
    os.chmod(folder, 0o700)
    # A cache of its own: the first run probes, the second reuses that probe.
    env = {"BACKPORT_KEEP_WORKERS": "1", "BACKPORT_RUNTIME_DIR": str(folder), "COLUMNS": "300",
           "BACKPORT_CACHE": str(folder / "cache")}
    try:
        first = run_cli(sandbox.project, "-v", "apply", "--api", "plain_torch", "--branch",
                        "v2.7.1", "--branch", "v2.11.0", "--no-push", env=env)
        second = run_cli(sandbox.project, "-v", "apply", "--api", "plain_torch", "--branch",
                         "v2.7.1", "--no-push", "--force", env=env)
        own = run_app(sandbox.project, "-v", "apply", "--api", "plain_torch", "--branch",
                      "v2.7.1", "--no-push", "--force", "--no-keep-workers",
                      env={"BACKPORT_KEEP_WORKERS": "0", "COLUMNS": "300"})
        assert (first.code, second.code, own.code) == (0, 0, 0), first.err + second.err + own.err
        started = KEPT.findall(first.out + first.err)
        reused = KEPT.findall(second.out + second.err)
        # One worker for both branches (one environment): "started now" for one branch only.
        kinds = set(BRANCH_KIND.findall(first.out + first.err))
        assert {branch for branch, _, _ in kinds} == {"v2.7.1", "v2.11.0"}, kinds
        starters = [branch for branch, _, kind in kinds if kind == "started now"]
        assert len(starters) == 1, kinds
        assert {kind for branch, _, kind in kinds if branch != starters[0]} == {
            f"started earlier in this run, for {starters[0]}"}, kinds
        assert reused and {kind for _, kind in reused} == {"kept from an earlier run"}
        assert {pid for pid, _ in reused} == {pid for pid, _ in started}
        assert "reused an earlier probe" not in first.out + first.err
        assert "reused an earlier probe" in second.out + second.err
        assert not KEPT.search(own.out + own.err) and "(warm worker)" in own.out + own.err

        stop = run_cli(sandbox.project, "env", "stop", env=env)
        assert stop.code == 0, stop.err
        (pid,) = {pid for pid, _ in started}
        assert f"stopped 1 kept warm worker (pid {pid})" in stop.out
        assert wait_gone(int(pid))
        again = run_app(sandbox.project, "env", "stop", env=env)
        assert again.code == 0 and "no kept warm worker is running" in again.out
    finally:
        pids = stop_kept_workers(folder)
        assert all(wait_gone(pid) for pid in pids)
        shutil.rmtree(folder, ignore_errors=True)

