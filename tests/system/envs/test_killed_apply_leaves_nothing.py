"""`kill -9` of a running `backport apply` ends its test, and what the test started in a
session of its own (the real CLI, its real test step)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

from backport.demo.sandbox import Sandbox
from tests.helpers.project import edit_config, sandbox  # noqa: F401 - the fixture

from .conftest import needs_namespaces, sigkill_when_lingering

# The environment's wrapper: the probe runs as it would; the test leaves a process in a session
# of its own and waits. The marker in both command lines finds them from outside.
WRAPPER = """#!/bin/sh
case "$*" in
  *test_metrics_api.py*) ;;
  *) exec {python} "$@" ;;
esac
{python} -c 'import os, time; os.setsid(); time.sleep(600)' {marker} &
touch {marker}.started
exec {python} -c 'import time; time.sleep(600)' {marker}
"""


def test_kill_9_of_apply_leaves_no_test_running(sandbox: Sandbox,  # noqa: F811
                                                 tmp_path: Path) -> None:
    needs_namespaces()
    # in the test's worktree: the only folder of the host it writes
    worktree = sandbox.project / ".backport" / "worktrees" / "put_metric" / "master"
    marker = str(worktree / f"linger-{uuid.uuid4().hex}")
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(WRAPPER.format(python=sys.executable, marker=marker), encoding="utf-8")
    wrapper.chmod(0o755)

    def wrapped(data: dict) -> None:
        for env in data["environments"].values():
            env["wrapper"] = [str(wrapper)]
    edit_config(sandbox, wrapped)
    apply = subprocess.Popen([sys.executable, "-m", "backport", "apply", "--api", "put_metric",
                              "--branch", "master", "--no-push"], cwd=sandbox.project,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sigkill_when_lingering(apply, marker, "apply")
