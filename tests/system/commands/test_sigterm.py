"""SIGTERM stops a command as Ctrl-C does: exit 130 at once, the same message, the journal kept.

Each command is held mid-run by an event (a git step that waits for a file), then signalled;
the hold is released only after the process has answered, so a command that waits for its
work to end before exiting is caught.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.processes import popen_interruptible
from tests.helpers.project import TOKEN, git

PROMPT = 10.0  # seconds: far above "within a second", far below the hold (which never ends)


def _held_git(tmp_path: Path, match: str) -> tuple[dict[str, str], Path, Path]:
    """An environment whose `git` waits, on its first call whose arguments hold ``match``,
    until the test releases it; the files saying it started and releasing it."""
    real = shutil.which("git")
    started, release, bin_dir = tmp_path / "git-held", tmp_path / "release", tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "git"
    shim.write_text(f"#!/bin/sh\ncase \" $* \" in *\"{match}\"*)\n"
                    f"  if [ ! -e '{started}' ]; then\n    touch '{started}'\n"
                    f"    while [ ! -e '{release}' ]; do sleep 0.05; done\n  fi;;\nesac\n"
                    f"exec '{real}' \"$@\"\n", encoding="utf-8")
    shim.chmod(0o755)
    env = {**os.environ, "GITCODE_TOKEN": TOKEN,
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return env, started, release


def _signal_when_held(project: Path, args: list[str], env: dict[str, str], started: Path,
                      release: Path, signum: int) -> tuple[int, float, str]:
    """Start the CLI, wait until its git is held, signal it: (exit code, seconds, stderr)."""
    proc = popen_interruptible([sys.executable, "-m", "backport", *args], cwd=project, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not started.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the command never reached the held git step"
            time.sleep(0.02)
        sent = time.monotonic()
        proc.send_signal(signum)
        try:
            _, err = proc.communicate(timeout=PROMPT)
        except subprocess.TimeoutExpired:
            return -1, time.monotonic() - sent, "still running"
        return proc.returncode, time.monotonic() - sent, err
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_audit_stops_at_once_while_git_computes_patch_ids(sandbox, tmp_path: Path,
                                                           signum: int) -> None:
    # the patch-ids are computed by a side thread: the signal lands on the main thread
    env, started, release = _held_git(tmp_path, " -p ")
    code, took, err = _signal_when_held(sandbox.project, ["audit", "--since", "2000-01-01"],
                                        env, started, release, signum)
    assert code == 130, f"{err} ({took:.1f} s)"
    assert err.rstrip().endswith("interrupted"), err
    assert "Traceback" not in err


def test_sigterm_stops_apply_as_ctrl_c_does_and_the_rerun_finishes(sandbox,
                                                                     tmp_path: Path) -> None:
    env, started, release = _held_git(tmp_path, " push ")
    code, took, err = _signal_when_held(sandbox.project,
                                        ["apply", "--api", "put_metric", "--skip-tests"],
                                        env, started, release, signal.SIGTERM)
    assert code == 130, f"{err} ({took:.1f} s)"
    lines = err.splitlines()
    said = lines.index("interrupted: every finished step is in the run's journal; this "
                       "finishes what is left (a step cut off midway is done again):")
    assert lines[said + 1:] == ["  backport apply --api put_metric --skip-tests"], err
    again = subprocess.run([sys.executable, "-m", "backport", *lines[said + 1].split()[1:]],
                           cwd=sandbox.project, env={**os.environ, "GITCODE_TOKEN": TOKEN},
                           capture_output=True, text=True, check=False, timeout=300)
    assert again.returncode == 0, again.stderr
    assert len(git(sandbox.fork, "for-each-ref", "refs/heads").splitlines()) == 4
