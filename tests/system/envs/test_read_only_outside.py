"""A patch's test writes only where tests may: its worktree and the temporary folders. The
tool's installation, the journal and patch sets beside the worktrees, and a home folder's git
configuration stay as they were, so nothing a later step runs or reads (a CI's publish step
holding the token) can be changed by the test, on every path a test runs (the forked ones in
test_secret_out_of_reach.py, whose worker runs both checks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.envs import sandbox
from backport.envs.probe import probe
from backport.envs.runner import TestRunner as Runner

from .conftest import needs_namespaces, outside_folder, run_writer


def test_an_isolated_test_writes_only_its_worktree(plain_env: Environment, project: Path,
                                                   tmp_path: Path) -> None:
    needs_namespaces()
    with Runner(plain_env, probe(plain_env), device="none", isolated=True) as runner:
        assert run_writer(runner, project, tmp_path) == "isolated"


# A test forked from a warm worker: test_secret_out_of_reach.py's
# test_a_forked_test_finds_no_secret_writes_only_its_worktree_and_ends_with_its_killed_run runs
# the writer there, in the worker that also runs the secret walker (one torch import for all).


@pytest.mark.parametrize("setattr_off", ["", "1"], ids=["mount_setattr", "remount-each"])
def test_a_sandboxed_command_writes_only_its_folders(tmp_path: Path, setattr_off: str) -> None:
    """Both ways of making mounts read-only (the kernel's recursive one, and one remount per
    mount for kernels before 5.12) leave the writable folder writable and nothing else."""
    needs_namespaces()
    outside = outside_folder()
    inside = tmp_path / "worktree"
    inside.mkdir()
    env = {**os.environ, "BACKPORT_SANDBOX_NO_SETATTR": setattr_off}
    try:
        check = subprocess.run([sys.executable, "-I", "-S", sandbox.INIT_SCRIPT, "--writable",
                                str(inside), "--check"], env=env, capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        done = subprocess.run(
            [sys.executable, "-I", "-S", sandbox.INIT_SCRIPT, "--writable", str(inside), "--",
             "sh", "-c", f"echo x > rel.txt; echo x > {inside}/in.txt; "
                         f"mount -o remount,bind,rw / || true; echo x > {outside}/out.txt"],
            env=env, capture_output=True, text=True, cwd=inside)
        assert done.returncode != 0
        # a relative path from the folder it started in is written too (the folder is entered
        # again through the new mounts)
        assert (inside / "rel.txt").exists() and (inside / "in.txt").exists()
        assert not (outside / "out.txt").exists()
    finally:
        shutil.rmtree(outside, ignore_errors=True)
