"""A patch's test keeps nothing of its run: what it writes in a temporary folder (a git
repository a later step's git would discover there, a file in each) is its sandbox's own and
gone with it, the other branches' worktrees are out of its reach, and its worktree's ``.git``
and git folders stay as the tool made them, however it ran (isolated, or forked from a warm
worker), with the project, the cache and the environment's venv under ``/tmp``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs import sandbox
from backport.envs.model import Probe
from backport.envs.probe import probe
from backport.envs.runner import TestRunner as Runner
from backport.git.worktree import Worktree
from tests.helpers.gitrepos import git

from .conftest import needs_namespaces, snapshot, two_worktrees


@pytest.fixture
def private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$TMPDIR`` a folder of this test's (what a test plants there must not reach the
    shared machine's other tests, even where the sandbox fails)."""
    folder = tmp_path / "tmpdir"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # asked again, with this $TMPDIR
    return folder


@pytest.fixture
def marker() -> Iterator[str]:
    """The name part of every file the hostile test writes; those in the host's temporary
    folders are removed after the test, whatever it found."""
    name = f"keeps-nothing-{uuid.uuid4().hex[:12]}"
    yield name
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        for entry in os.listdir(folder) if os.path.isdir(folder) else ():
            if name in entry:
                os.unlink(os.path.join(folder, entry))


def _hostile_run(open_runner: Callable[[], Runner], tmp_path: Path, private_tmpdir: Path,
                 marker: str) -> str:
    """Run the hostile test in one of two worktrees under /tmp; check, once the runner has
    ended, that it kept nothing; how it ran."""
    project = tmp_path / "project"
    cache, own, other = two_worktrees(project)
    canary = Path("/tmp") / f"backport-canary-{marker}"
    canary.write_text("the host's\n", encoding="utf-8")
    pointer = (own / ".git").read_bytes()
    before = snapshot(tmp_path, skip=(own,))
    sandbox.allow_writes([project / ".backport" / "worktrees"], reads=[project])
    try:
        with open_runner() as runner:
            run = runner.run(own, Spec("test/test_hostile.py", (marker, str(canary))),
                             tmp_path / "hostile.log")
    finally:
        sandbox.allow_writes([])
    log = Path(run.log).read_text(encoding="utf-8")
    assert "TRIED ALL" in log and run.exit_code == 0, log
    assert f"DID own {own}/mine-{marker}" in log and (own / f"mine-{marker}").is_file(), log
    # its worktree's git files are as the tool made them: the publish step still finds it
    assert (own / ".git").read_bytes() == pointer, log
    assert Worktree.open(own).repo == (cache / ".git").resolve()
    assert git(own, "rev-parse", "HEAD") == git(other, "rev-parse", "HEAD")
    # nothing else changed: the other worktree, the cache, the project, this $TMPDIR
    after = snapshot(tmp_path, skip=(own, tmp_path / "hostile.log"))
    assert after == before, (sorted(set(after.items()) ^ set(before.items())), log)
    # no repository for a later step's git to discover in the temporary folder
    found = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=private_tmpdir,
                           env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)},
                           capture_output=True, text=True)
    assert found.returncode != 0, found.stdout
    assert canary.read_text(encoding="utf-8") == "the host's\n"
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        left = [e for e in os.listdir(folder) if marker in e] if os.path.isdir(folder) else []
        assert left in ([], [canary.name]), (folder, left, log)
    return run.runner


def test_an_isolated_test_keeps_nothing(plain_env: Environment, tmp_path: Path,
                                        private_tmpdir: Path, marker: str) -> None:
    needs_namespaces()
    found = probe(plain_env)
    assert _hostile_run(lambda: Runner(plain_env, found, device="none", isolated=True),
                        tmp_path, private_tmpdir, marker) == "isolated"


@pytest.mark.torch
def test_a_forked_test_keeps_nothing(torch_env: Environment, torch_probe: Probe,
                                     tmp_path: Path, private_tmpdir: Path, marker: str) -> None:
    needs_namespaces()
    assert _hostile_run(lambda: Runner(torch_env, torch_probe, device="none"),
                        tmp_path, private_tmpdir, marker) == "warm"


# Reads its environment (a module of its venv), the project and its commit (through the
# cache's git folder), writes its worktree and /tmp; cannot write the cache or the venv.
READER = """
import os, subprocess, sys
import venv_mark
project, cache, venv, scratch = sys.argv[1:5]
wrote = []
for path in ("mine.txt", scratch, os.path.join(cache, "planted"),
             os.path.join(venv, "planted")):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        wrote.append(path)
    except OSError as exc:
        print("REFUSED %s: %s" % (path, exc.strerror))
head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout
print("MARK %s PROJECT %s HEAD %s WROTE %s" % (
    venv_mark.MARK, open(os.path.join(project, "branches.yaml")).read().strip(), head.strip(),
    wrote))
"""


def test_a_project_cache_and_venv_under_tmp_serve_the_test(tmp_path: Path, marker: str) -> None:
    """A CI workspace under /tmp: the project, the cache repository and the environment's
    venv lie there; the test reads them all, and writes none but its worktree."""
    needs_namespaces()
    project = tmp_path / "project"
    cache, own, _ = two_worktrees(project)
    (project / "branches.yaml").write_text("version: 1\n", encoding="utf-8")
    (own / "test" / "test_reader.py").write_text(READER, encoding="utf-8")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = venv.glob("lib/python*/site-packages")
    (site / "venv_mark.py").write_text("MARK = 'from-the-venv'\n", encoding="utf-8")
    scratch = f"/tmp/scratch-{marker}"
    env = Environment(name="tmp-venv", python=venv / "bin" / "python", timeout=60.0)
    sandbox.allow_writes([project / ".backport" / "worktrees"], reads=[project])
    try:
        with Runner(env, probe(env), device="none", isolated=True) as runner:
            run = runner.run(own, Spec("test/test_reader.py", (
                str(project), str(cache / ".git"), str(venv), scratch)), tmp_path / "r.log")
    finally:
        sandbox.allow_writes([])
    log = Path(run.log).read_text(encoding="utf-8")
    head = git(own, "rev-parse", "HEAD")
    assert f"MARK from-the-venv PROJECT version: 1 HEAD {head} WROTE ['mine.txt', " \
           f"'{scratch}']" in log, log
    assert run.exit_code == 0, log
    assert (own / "mine.txt").is_file()
    assert not (cache / ".git" / "planted").exists() and not (venv / "planted").exists()
    assert not os.path.exists(scratch)  # the test's /tmp was its own
