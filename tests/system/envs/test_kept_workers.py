"""Kept warm workers and the probe cache: real processes, real torch, venvs made here.

A second run reuses what the first left (the worker, the probe) only while nothing it depends
on changed; a changed site-packages, a dead worker or an idle timeout each lead to a fresh one.
A kept worker is used only while it is the process this tool started: a record whose pid now
names another process is not trusted, and the run starts a fresh worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from backport.codec import encode
from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs.kept import KeepPolicy, socket_path, start_time
from backport.envs.model import Probe
from backport.envs.probe_cache import cached_probe
from backport.envs.runner import TestRunner as Runner
from backport.envs.worker import EarlyWorker
from tests.helpers.processes import wait_gone

from .conftest import Probed, folded_probe, write

TORCH_TEST = """
import os
import unittest

import torch


class Small(unittest.TestCase):
    def test_sum(self):
        self.assertEqual(torch.ones(3).sum().item(), 3.0)

    def test_this_run_environment(self):
        self.assertEqual(os.environ.get("BP_RUN"), os.environ.get("BP_EXPECT"))


if __name__ == "__main__":
    unittest.main()
"""


def _site(python: Path) -> Path:
    return Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())


@pytest.fixture
def own_env(torch_python: Path, tmp_path: Path) -> Environment:
    """A venv of this test that sees the torch environment through a ``.pth`` file."""
    root = tmp_path / "venv"
    subprocess.run([str(torch_python), "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    (_site(python) / "torch_env.pth").write_text(f"{_site(torch_python)}\n", encoding="utf-8")
    return Environment(name="own", python=python, timeout=120.0)


@pytest.fixture
def plain_venv(tmp_path: Path) -> Environment:
    """A venv without torch (fast to probe) whose site-packages this test may change."""
    root = tmp_path / "plain"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    return Environment(name="plain", python=root / "bin" / "python", timeout=60.0)


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    wt = tmp_path / "wt"
    write(wt / "test" / "test_small.py", TORCH_TEST)
    return wt


def _run(env: Environment, found: Probe, keep: KeepPolicy, worktree: Path,
         name: str, early: EarlyWorker | None = None) -> tuple[int, str]:
    """One run: a runner of its own (as one `backport apply` has), one test; its worker
    (``early``: the one started for it before its probe ended)."""
    with Runner(env, found, device="none", keep=keep, early=early) as runner:
        run = runner.run(worktree, Spec("test/test_small.py"), worktree / f"{name}.log")
        assert (run.runner, run.ok, run.ran) == ("warm", True, 2), \
            (worktree / f"{name}.log").read_text()
        assert runner.worker_pid is not None
        return runner.worker_pid, runner.kind


def _add_distribution(env: Environment, name: str, version: str) -> None:
    info = _site(env.interpreter) / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                                   encoding="utf-8")


@pytest.mark.torch
def test_later_runs_reuse_the_kept_worker_while_trusted_until_site_packages_change_or_it_is_killed(
    own_env: Environment, kept: KeepPolicy, worktree: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One kept worker's life after another: each step that ends one is followed by the next
    on the fresh one (a fresh worker costs an import of torch)."""
    # The first run's worker, started before its probe ended, runs the probe's check too.
    found, early = folded_probe(own_env, kept)
    # A second run reuses the worker the first one started, and its own variable reaches its
    # test (the worker was started with the first run's environment).
    monkeypatch.setenv("BP_RUN", "first")
    monkeypatch.setenv("BP_EXPECT", "first")
    first_pid, first_kind = _run(own_env, found, kept, worktree, "1", early)
    monkeypatch.setenv("BP_RUN", "second")
    monkeypatch.setenv("BP_EXPECT", "second")
    second_pid, second_kind = _run(own_env, found, kept, worktree, "2")
    assert "started now" in first_kind and f"pid {first_pid}" in first_kind
    assert second_pid == first_pid and "kept from an earlier run" in second_kind
    os.kill(first_pid, 0)  # still there for the next run
    # It was trusted as the process this tool started: its starter's record names its pid and
    # its start time.
    [record_file] = kept.folder.glob("w-*.json")
    record = json.loads(record_file.read_text())
    assert record["pid"] == first_pid and record["start"] == start_time(first_pid)
    # A record whose pid now names another process (as after the worker ended and its pid was
    # reused: that process started at another time) is not trusted: a fresh worker is started.
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        record_file.write_text(json.dumps({**record, "pid": other.pid}))
        trusted, kind = _run(own_env, found, kept, worktree, "untrusted")
        assert trusted not in (first_pid, other.pid) and "started now" in kind
        assert json.loads(record_file.read_text())["pid"] == trusted
    finally:
        assert other.stdin is not None
        other.stdin.close()
        other.wait()
        os.kill(first_pid, signal.SIGKILL)  # the worker no run may use any more
        assert wait_gone(first_pid)
    # A changed site-packages: a new kept worker; the old one is told to shut down.
    old = trusted
    _add_distribution(own_env, "bp_new_dist", "1.0")
    new, kind = _run(own_env, found, kept, worktree, "3")
    assert new != old and "started now" in kind
    assert wait_gone(old)  # it serves nobody any more
    # Killed between runs: a stale socket, a new kept worker.
    dead = new
    os.kill(dead, signal.SIGKILL)
    assert wait_gone(dead)
    pid, kind = _run(own_env, found, kept, worktree, "4")
    assert pid != dead and "started now" in kind
    # The dead worker's scratch folder went with its socket; only the live one has one.
    assert [p.name for p in kept.folder.glob("*.spool")] == [
        p.with_suffix(".spool").name for p in kept.folder.glob("*.sock")]
    # Killed while a run holds it (after its warm-up): that run goes on with its own worker.
    with Runner(own_env, found, device="none", keep=kept) as runner:
        runner.warm_up()
        assert runner.worker_pid == pid
        os.kill(pid, signal.SIGKILL)
        assert wait_gone(pid)
        run = runner.run(worktree, Spec("test/test_small.py"), worktree / "5.log")
        assert (run.runner, run.ok) == ("warm", True), (worktree / "5.log").read_text()
        assert runner.worker_pid != pid and runner.kind == "warm worker"


RUN_ONE = """
import json, sys, time
from pathlib import Path
from backport.config.model import Environment, TestSpec
from backport.envs.kept import KeepPolicy
from backport.codec import decode
from backport.envs.model import Probe
from backport.envs.runner import TestRunner

python, folder, idle, worktree, name, other, found = sys.argv[1:]
env = Environment(name="torch", python=Path(python), timeout=120.0)
found = decode(Probe, json.loads(found))  # the parent's probe: the runs are the subject here
keep = KeepPolicy(Path(folder), idle=float(idle))
with TestRunner(env, found, device="none", keep=keep) as runner:
    runner.warm_up()  # connected: say so, and test once the other run is connected too
    Path(worktree, name + ".up").touch()
    deadline = time.monotonic() + 300
    while not Path(worktree, other + ".up").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    run = runner.run(Path(worktree), TestSpec("test/test_small.py"), Path(worktree) / name)
    print(json.dumps({"ok": run.ok, "runner": run.runner, "ran": run.ran,
                      "pid": runner.worker_pid}))
"""


@pytest.mark.torch
def test_two_concurrent_runs_share_one_kept_worker_that_ends_after_its_idle_timeout(
    torch_env: Environment, kept: KeepPolicy, worktree: Path, probed: Probed
) -> None:
    # Two runs at once, both connected before either tests (so no idle time passes between
    # them): one starts the kept worker, the other waits for that start and shares it. Once
    # both have left, it ends after its idle timeout (1 s here) and takes its socket along.
    short = KeepPolicy(kept.folder, idle=1.0)
    found = json.dumps(encode(probed(torch_env)))
    procs = [subprocess.Popen([sys.executable, "-c", RUN_ONE, str(torch_env.interpreter),
                               str(short.folder), f"{short.idle:g}", str(worktree), name, other,
                               found], stdout=subprocess.PIPE, text=True)
             for name, other in (("1", "2"), ("2", "1"))]
    results = [json.loads(proc.communicate(timeout=300)[0].strip().splitlines()[-1])
               for proc in procs]
    assert [(r["ok"], r["runner"], r["ran"]) for r in results] == [(True, "warm", 2)] * 2
    assert results[0]["pid"] == results[1]["pid"]
    assert wait_gone(results[0]["pid"])
    launch = [str(torch_env.interpreter)]
    assert not socket_path(short, launch, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}).exists()
    assert not list(kept.folder.glob("*.sock"))


def test_probe_cache_is_reused_until_something_it_reads_changes(
    plain_venv: Environment, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    first, reused = cached_probe(plain_venv, cache)
    assert not reused and first.packages.get("torch") is None
    again, reused = cached_probe(plain_venv, cache)
    assert reused and again == first
    _add_distribution(plain_venv, "torch", "9.9.9")
    changed, reused = cached_probe(plain_venv, cache)
    assert not reused and changed.packages.get("torch") == "9.9.9"
    assert cached_probe(plain_venv, cache) == (changed, True)


def test_probe_cache_follows_variables_and_the_source_script(
    plain_venv: Environment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    script = tmp_path / "set_env.sh"
    script.write_text("export BP_A=1\n", encoding="utf-8")
    env = Environment(name="plain", python=plain_venv.interpreter, source=script,
                      source_shown="set_env.sh", env={"BP_X": "1"})
    assert cached_probe(env, cache)[1] is False
    assert cached_probe(env, cache)[1] is True
    script.write_text("export BP_A=2\n", encoding="utf-8")
    assert cached_probe(env, cache)[1] is False
    other = Environment(name="plain", python=plain_venv.interpreter, source=script,
                        source_shown="set_env.sh", env={"BP_X": "2"})
    assert cached_probe(other, cache)[1] is False
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "3")
    assert cached_probe(other, cache)[1] is False
    assert cached_probe(other, cache)[1] is True






def test_probe_cache_follows_the_pinned_distributions(
    plain_venv: Environment, tmp_path: Path
) -> None:
    # The probe reads the versions of the pinned distributions too: other pins, another probe.
    cache = tmp_path / "cache"
    _add_distribution(plain_venv, "bp_pinned", "2.0")
    assert cached_probe(plain_venv, cache)[0].packages.get("bp_pinned") is None
    pinned = Environment(name="plain", python=plain_venv.interpreter, expect={"bp_pinned": "2.0"})
    found, reused = cached_probe(pinned, cache)
    assert not reused and found.packages.get("bp_pinned") == "2.0"


def test_probe_cache_follows_the_cann_version_file(
    plain_venv: Environment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CANN can be upgraded in place without site-packages changing: the probe reads its
    # version file, so a changed file means a new probe.
    cache = tmp_path / "cache"
    toolkit = tmp_path / "Ascend" / "latest"
    toolkit.mkdir(parents=True)
    (toolkit / "version.cfg").write_text("version=8.0.RC1\n", encoding="utf-8")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(toolkit))
    first, reused = cached_probe(plain_venv, cache)
    assert (first.cann, reused) == ("8.0.RC1", False)
    assert cached_probe(plain_venv, cache) == (first, True)
    (toolkit / "version.cfg").write_text("version=8.0.RC2\n", encoding="utf-8")
    upgraded, reused = cached_probe(plain_venv, cache)
    assert (upgraded.cann, reused) == ("8.0.RC2", False)


# A `source:` script reaches its test with kept workers on, through a worker of the run's own:
# tests/system/pipeline/test_launch.py (its `source:` branch, run by `apply` with them on).
