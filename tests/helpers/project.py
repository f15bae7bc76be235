"""Project sandboxes on real bare repositories, the real CLI in a subprocess or in-process, and their fixtures."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from backport.cli import main
from backport.demo.sandbox import Sandbox, build_sandbox
from tests.fakes.gitcode import FakeGitCode, git_branch_checker

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "patches" / "put_metric"
TORCH_PYTHON = os.environ.get("BACKPORT_TEST_PYTHON")
needs_torch = pytest.mark.skipif(not TORCH_PYTHON, reason="BACKPORT_TEST_PYTHON is not set "
                                 "(scripts/test.sh sets it to the torch 2.13.0 venv)")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


def run_cli(project: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 300) -> Result:
    """Run `python -m backport ARGS` in ``project`` the way a user would."""
    proc = subprocess.run([sys.executable, "-m", "backport", *args], cwd=project,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, check=False)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def run_app(project: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """Run the CLI's ``main(ARGS)`` in this process, in ``project``, as `run_cli` would.

    The same entry point, exit codes and output as the subprocess, without starting an
    interpreter: for the tests whose subject is not the process itself. Each command keeps
    one `run_cli` test end to end.
    """
    out, err = io.StringIO(), io.StringIO()
    saved_env, cwd = dict(os.environ), os.getcwd()
    saved_term = signal.getsignal(signal.SIGTERM)
    os.environ.update(env or {})
    os.chdir(project)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        signal.signal(signal.SIGTERM, saved_term)
    return Result(code, out.getvalue(), err.getvalue())


# The tests' own git calls start no auto maintenance (git runs it after commits and fetches).
NO_MAINTENANCE = ("-c", "maintenance.auto=false")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *NO_MAINTENANCE, *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, "LANG": "C"}).stdout.strip()


def rev(repo: Path, ref: str) -> str | None:
    proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", ref], cwd=repo,
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def pr_body(project: Path, base: str) -> str:
    """The body of the local forge's PR into ``base``."""
    with sqlite3.connect(project / ".backport" / "forge.sqlite") as db:
        (body,) = db.execute("SELECT body FROM prs WHERE base = ?", (base,)).fetchone()
    return body


def edit_config(sandbox: Sandbox, change) -> None:
    data = yaml.safe_load(sandbox.config.read_text(encoding="utf-8"))
    change(data)
    sandbox.config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


TOKEN = "gc-secret-token-5f3a9"  # the only token the fake GitCode server accepts


@pytest.fixture
def gitcode(sandbox: Sandbox):
    """A fake GitCode v5 server that knows the sandbox's fork; branches.yaml points at it."""
    server = FakeGitCode(tokens={TOKEN}, upstream="Ascend/pytorch", fork="lgxxx/pytorch",
                         branch_exists=git_branch_checker({"lgxxx/pytorch": sandbox.fork}))
    server.start()

    def to_gitcode(data: dict) -> None:
        data["forge"] = "gitcode"
        data["api_url"] = server.url
    edit_config(sandbox, to_gitcode)
    yield server
    server.stop()


def copy_sandbox(built: Sandbox, root: Path) -> Sandbox:
    """A copy of a built sandbox at ``root``, its branches.yaml naming the copy's repositories."""
    shutil.copytree(built.root, root, symlinks=True)
    copy = Sandbox(root=root, upstream=root / built.upstream.relative_to(built.root),
                   fork=root / built.fork.relative_to(built.root),
                   project=root / built.project.relative_to(built.root))
    text = copy.config.read_text(encoding="utf-8")
    copy.config.write_text(text.replace(str(built.root), str(root)), encoding="utf-8")
    return copy


@pytest.fixture(scope="session")
def built_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """The demo's sandbox, built once per test process; each test gets its own copy."""
    return build_sandbox(tmp_path_factory.mktemp("sandbox") / "sb", PATCHES,
                         TORCH_PYTHON or sys.executable)


@pytest.fixture
def sandbox(tmp_path: Path, built_sandbox: Sandbox) -> Sandbox:
    """The demo's sandbox: upstream with four branches, empty fork, local forge, put_metric
    (a copy of the one built for the session, at ``tmp_path / "sb"``)."""
    return copy_sandbox(built_sandbox, tmp_path / "sb")
