"""A patch's test that walks /proc for the tool's token finds nothing: not in its own
environment, not in any other process's (the tool's, a CI shell's), on every path a test runs.
A test forked from a warm worker is also shown to write only its worktree there (the writer of
test_read_only_outside.py), and a SIGKILL of its run to end what it started (the lingering
test of test_killed_run_leaves_nothing.py), in the same worker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs.model import Probe
from backport.envs.probe import probe
from backport.envs.runner import TestRunner as Runner

from .conftest import check_writer, kill_driver_and_watch, needs_namespaces, writer_test

SECRET = "gtk-sandbox-secret-5f1d9c"

# Reads every process's environ and command line it can see, and its own; exits 1 on a find.
WALKER = f"""
import os, sys
secret = {SECRET!r}.encode()
seen = found = 0
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    for part in ("environ", "cmdline"):
        try:
            with open("/proc/%s/%s" % (name, part), "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        seen += 1
        if secret in data:
            found += 1
            print("FOUND in /proc/%s/%s" % (name, part))
if secret.decode() in str(dict(os.environ)):
    found += 1
    print("FOUND in os.environ")
print("walked: seen %d found %d" % (seen, found))
sys.exit(1 if found or not seen else 0)
"""


@pytest.fixture
def holder(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The token in the tool's environment, and a process holding it in its own (as `backport`
    itself or a CI job's shell does); the pid of that process."""
    monkeypatch.setenv("GITCODE_TOKEN", SECRET)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            env={**os.environ, "GITCODE_TOKEN": SECRET}, stdin=subprocess.PIPE)
    try:
        # The precondition: outside the sandbox the secret can be read from /proc (once the
        # child has exec'd; before that its environ reads empty).
        deadline = time.monotonic() + 60
        while SECRET.encode() not in Path(f"/proc/{proc.pid}/environ").read_bytes():
            assert time.monotonic() < deadline, "the holder never showed the secret"
            time.sleep(0.02)
        yield proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()


def _walk(runner: Runner, tmp_path: Path, name: str) -> tuple[str, str | None, str, int | None]:
    worktree = tmp_path / "wt"
    (worktree / "test").mkdir(parents=True, exist_ok=True)
    (worktree / "test" / "test_walk.py").write_text(WALKER, encoding="utf-8")
    run = runner.run(worktree, Spec("test/test_walk.py"), tmp_path / f"{name}.log")
    log = Path(run.log).read_text(encoding="utf-8")
    assert "walked:" in log, log  # it ran to its end
    return run.runner, getattr(run, "isolation", None), log, run.exit_code


def test_isolated_run_finds_no_secret(plain_env: Environment, holder: int,
                                      tmp_path: Path) -> None:
    needs_namespaces()
    with Runner(plain_env, probe(plain_env), device="none", isolated=True) as runner:
        kind, isolation, log, run_code = _walk(runner, tmp_path, "isolated")
    assert "FOUND" not in log and "found 0" in log and run_code == 0, log
    assert (kind, isolation) == ("isolated", "pid-namespace")


@pytest.mark.torch
def test_a_forked_test_finds_no_secret_writes_only_its_worktree_and_ends_with_its_killed_run(
        torch_env: Environment, torch_probe: Probe, holder: int, project: Path,
        tmp_path: Path) -> None:
    """Three checks of a test forked from a warm worker, in one worker (one torch import) of
    one run, whose process holds the token as the tool's does: the walker of this file, then
    test_read_only_outside.py's writer, then test_killed_run_leaves_nothing.py's lingering
    test, and SIGKILL of the run's process ends every process it started."""
    needs_namespaces()
    assert torch_env.python is not None
    walk_tree = tmp_path / "walk" / "wt"
    (walk_tree / "test").mkdir(parents=True)
    (walk_tree / "test" / "test_walk.py").write_text(WALKER, encoding="utf-8")
    write_tree, write_spec, paths, tool_before = writer_test(project)
    first = [{"worktree": str(walk_tree), "path": "test/test_walk.py", "args": [],
              "log": str(tmp_path / "walk" / "warm.log")},
             {"worktree": str(write_tree), "path": write_spec.path, "args": list(write_spec.args),
              "log": str(tmp_path / "write.log")}]
    walk, write = kill_driver_and_watch(
        torch_env.python, tmp_path / "run", "warm", torch_probe, first,
        allow=project / ".backport" / "worktrees")
    log = Path(walk["log"]).read_text(encoding="utf-8")
    assert "walked:" in log, log  # it ran to its end
    assert "FOUND" not in log and "found 0" in log and walk["exit_code"] == 0, log
    assert (walk["runner"], walk["isolation"]) == ("warm", "pid-namespace")
    check_writer(write["log"], write["exit_code"], paths, tool_before)
    assert write["runner"] == "warm"
