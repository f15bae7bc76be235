"""Ctrl-C during `backport continue` once `git am` is concluded: the command it prints finishes
the branch (`continue` itself would find no conflict left to continue)."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.processes import popen_interruptible
from tests.helpers.project import git, rev, run_app
from tests.helpers.upstream import CHANGED, CONTEXT, TEST_FILE, change_upstream_branch


def _wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_the_command_printed_at_ctrl_c_after_the_resolution_finishes_the_branch(
        sandbox, tmp_path: Path) -> None:
    change_upstream_branch(sandbox.upstream, "v2.11.0", tmp_path)
    first = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert first.code == 1, first.err
    # the maintainer's resolution: v2.7.1's patched file with v2.11.0's own change, staged
    worktree = sandbox.project / ".backport" / "worktrees" / "put_metric" / "v2.11.0"
    resolved = git(sandbox.fork, "show", f"test-put-metric-v2.7.1:{TEST_FILE}")
    (worktree / TEST_FILE).write_text(resolved.replace(CONTEXT, CHANGED), encoding="utf-8")
    git(worktree, "add", "--", TEST_FILE)
    # The fork's hook holds v2.11.0's push (after `git am` was concluded) until the interrupt.
    started, release = tmp_path / "push-started", tmp_path / "release"
    hook = sandbox.fork / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch '{started}'\n"
                    f"while [ ! -e '{release}' ]; do sleep 0.05; done\nexit 1\n",
                    encoding="utf-8")
    hook.chmod(0o755)
    proc = popen_interruptible([sys.executable, "-m", "backport", "continue", "--api",
                                "put_metric", "--branch", "v2.11.0", "--skip-tests"],
                               cwd=sandbox.project, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: started.exists() or proc.poll() is not None)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    lines = err.splitlines()
    said = lines.index("interrupted: every finished step is in the run's journal; this "
                       "finishes what is left (a step cut off midway is done again):")
    assert lines[said + 1] == ("  backport apply --api put_metric --branch v2.11.0 "
                               "--skip-tests"), err
    hook.unlink()
    again = run_app(sandbox.project, *shlex.split(lines[said + 1])[1:])
    assert again.code == 0, again.err
    head = rev(sandbox.fork, "refs/heads/test-put-metric-v2.11.0")
    assert head is not None
    assert "v2.11.0 reworded" in git(sandbox.fork, "show", f"{head}:{TEST_FILE}")
