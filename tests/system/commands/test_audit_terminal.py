"""`backport audit` as a process, its applies check held: on a terminal it shows its progress
(phase, count, elapsed) at least every 2 seconds; not on a terminal, nothing on stderr;
SIGTERM ends it at once, its git children with it, like Ctrl-C."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.helpers.gitrepos import commit_files, git, make_bare, make_repo
from tests.helpers.processes import alive, popen_interruptible

DAY = 24 * 3600
BASE = "".join(f"value_{n} = {n}\n" for n in range(40))


def _when(days: float) -> str:
    return f"@{int(time.time() - days * DAY)} +0000"


def _wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def _project(tmp_path: Path) -> tuple[Path, dict[str, str], Path, Path]:
    """A project whose master has three changes v2.7.1 lacks, and a `git` first on PATH
    that holds the first `git apply` (the applies check) until ``release`` exists, its pid
    written to ``started``."""
    work = make_repo(tmp_path / "work")
    commit_files(work, {"mod/a.py": BASE}, "root", date=_when(300))
    git(work, "branch", "v2.7.1")
    for n in (3, 11, 19):
        commit_files(work, {"mod/a.py": BASE.replace(f"value_{n} = {n}", f"value_{n} = -{n}")},
                     f"fix: {n}", date=_when(30 - n))
    bare = make_bare(tmp_path / "upstream.git")
    git(work, "push", "--quiet", str(bare), "master", "v2.7.1")
    project = tmp_path / "project"
    (project / "patches").mkdir(parents=True)
    config = {"forge": "local", "upstream": "Ascend/pytorch", "fork": "lgxxx/pytorch",
              "upstream_url": str(bare), "fork_url": str(tmp_path / "fork.git"),
              "environments": {"py": {"python": sys.executable}},
              "branches": {b: {"env": "py"} for b in ("v2.7.1", "master")}}
    (project / "branches.yaml").write_text(yaml.safe_dump(config, sort_keys=False),
                                           encoding="utf-8")
    started, release = tmp_path / "apply-started", tmp_path / "release"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("git")
    (bin_dir / "git").write_text(
        f"#!/bin/sh\ncase \" $* \" in *\" apply \"*)\n  if [ ! -e '{started}' ]; then\n"
        f"    echo $$ > '{started}'\n    while [ ! -e '{release}' ]; do sleep 0.05; done\n"
        f"  fi;;\nesac\nexec '{real}' \"$@\"\n", encoding="utf-8")
    (bin_dir / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "BACKPORT_CACHE": str(tmp_path / "cache")}
    return project, env, started, release


def _start(project: Path, env: dict[str, str], stderr: int) -> subprocess.Popen:
    return popen_interruptible([sys.executable, "-m", "backport", "audit", "--json"],
                               cwd=project, env=env, stdout=subprocess.PIPE, stderr=stderr)


def _read(fd: int, seconds: float) -> list[tuple[float, bytes]]:
    """What the terminal got in the next ``seconds``, each read with the time it came."""
    got, end = [], time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                got.append((time.monotonic(), os.read(fd, 4096)))
            except OSError:
                break
    return got


def test_on_a_terminal_the_progress_is_redrawn_at_least_every_two_seconds(
        tmp_path: Path) -> None:
    project, env, started, release = _project(tmp_path)
    main, secondary = pty.openpty()
    proc = _start(project, env, secondary)
    os.close(secondary)
    try:
        _wait_for(lambda: started.exists() or proc.poll() is not None)
        shown = _read(main, 5.0)  # the run is held in its applies check meanwhile
        release.touch()
        out, _ = proc.communicate(timeout=120)
        rest = b"".join(chunk for _, chunk in _read(main, 0.5))
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    assert proc.returncode == 0
    draws = [(when, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line)) for when, chunk in shown
             for line in chunk.decode().split("\r")]
    held = [(when, line) for when, line in draws
            if re.fullmatch(r"audit: checking whether missing changes apply 0/3 \d+:\d\d:\d\d",
                            line)]
    assert len(held) >= 3, draws
    gaps = [b[0] - a[0] for a, b in zip(held, held[1:], strict=False)]
    assert max(gaps) <= 2.0, gaps
    assert rest.endswith(b"\x1b[2K")  # the line is cleared before the run ends
    assert len(json.loads(out)["changes"]) == 3


def test_not_on_a_terminal_stderr_stays_empty(tmp_path: Path) -> None:
    project, env, _, release = _project(tmp_path)
    release.touch()
    proc = _start(project, env, subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b""
    assert len(json.loads(out)["changes"]) == 3


def test_sigterm_ends_the_run_at_once_with_its_git(tmp_path: Path) -> None:
    project, env, started, release = _project(tmp_path)
    proc = _start(project, env, subprocess.PIPE)
    try:
        _wait_for(lambda: started.exists() or proc.poll() is not None)
        held = int(started.read_text().split()[0])
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert took < 1.0, f"{took:.2f} s"
    assert not alive(held)  # the held git went with the run
