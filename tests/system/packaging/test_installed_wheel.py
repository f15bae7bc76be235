"""Installed, not cloned: the wheel in a fresh venv outside the checkout runs demo, init, check.

Runs everywhere the suite runs (CI included), with no package registry: the wheel is built by
pip with its usual build isolation (setuptools from the wheelhouse set-up fills), once per
session for this test and the workflow tests (tests/helpers/wheels.py), the package is installed without
the network (`--no-index --no-deps`), and its dependencies are the tool venv's
own, added after the new venv's site-packages so the installed copy of backport is the one
imported.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.helpers.wheels import session_backport_wheel

ROOT = Path(__file__).resolve().parents[3]
TORCH_PYTHON = os.environ.get("BACKPORT_TEST_PYTHON")


@pytest.fixture(scope="session")
def backport_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """backport's wheel, built by pip from a copy of the checkout (read only)."""
    return session_backport_wheel(tmp_path_factory)


def _run(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def _fresh_venv(path: Path, wheel: Path) -> Path:
    """A venv with the wheel installed; its dependencies come from this interpreter's."""
    venv.EnvBuilder(with_pip=False).create(path)
    python = path / "bin" / "python"
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install",
                      "--no-index", "--no-deps", "--quiet", str(wheel)], cwd=path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                         "'purelib'))"], cwd=path).stdout.strip())
    (purelib / "zz_backport_dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    return path / "bin"


@pytest.mark.slow
def test_the_installed_wheel_runs_demo_init_and_check_from_any_folder(
        tmp_path: Path, backport_wheel: Path) -> None:
    bin_dir = _fresh_venv(tmp_path / "venv", backport_wheel)
    anywhere = tmp_path / "elsewhere"
    anywhere.mkdir()
    where = _run([str(bin_dir / "python"), "-c", "import backport; print(backport.__file__)"],
                 cwd=anywhere)
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), where.stdout + where.stderr
    # git's askpass program is a file of the installed package, executable as installed
    askpass = _run([str(bin_dir / "python"), "-c", "import os; from backport.forge.token import "
                    "ASKPASS_PROGRAM as p; print(p, os.access(p, os.X_OK))"], cwd=anywhere)
    program, executable = askpass.stdout.split()
    assert Path(program).is_relative_to(tmp_path / "venv") and executable == "True", askpass

    torch = ["--python", TORCH_PYTHON] if TORCH_PYTHON else []
    demo = _run([str(bin_dir / "backport"), "demo", "--dir", str(anywhere / "sb"), *torch],
                cwd=anywhere)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    project = anywhere / "sb" / "project"
    with sqlite3.connect(project / ".backport" / "forge.sqlite") as db:
        bases = sorted(base for (base,) in db.execute("SELECT base FROM prs"))
    assert bases == ["master", "v2.11.0", "v2.12.0", "v2.7.1"]
    # the same patch set as the checkout's: the sandbox a clone builds
    shipped = sorted(p.name for p in (ROOT / "patches" / "put_metric").iterdir())
    assert sorted(p.name for p in (project / "patches" / "put_metric").iterdir()) == shipped
    for name in shipped:
        assert ((project / "patches" / "put_metric" / name).read_bytes()
                == (ROOT / "patches" / "put_metric" / name).read_bytes())

    init = _run([str(bin_dir / "backport"), "init", "first"], cwd=anywhere)
    assert init.returncode == 0, init.stdout + init.stderr
    first = anywhere / "first"
    assert (first / "branches.yaml").read_bytes() == (ROOT / "branches.yaml").read_bytes()
    check = _run([str(bin_dir / "backport"), "check", "--offline"], cwd=first)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "follows the token's login" in " ".join(check.stdout.split())
    # the wheel holds the put_metric set init --from-shipped writes (issue 49 item 2)
    second = _run([str(bin_dir / "backport"), "init", "second", "--from-shipped", "put_metric"],
                  cwd=anywhere)
    assert second.returncode == 0, second.stdout + second.stderr
    for name in shipped:
        assert ((anywhere / "second" / "patches" / "put_metric" / name).read_bytes()
                == (ROOT / "patches" / "put_metric" / name).read_bytes())
