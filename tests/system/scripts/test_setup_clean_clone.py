"""scripts/setup.sh changes no tracked file (issue 49 item 1): in a fresh clone of what is
checked out, set-up leaves `git status` empty. What it resolves (the wheelhouse the workflow and
packaging tests install from) goes to an ignored folder.

Offline and cheap: the clone's `.venv` (the step that needs a package registry) is made
beforehand from this session's own packages, and pip finds the wheels in the wheelhouse set-up
filled for this checkout; `--no-torch` leaves the torch environment out."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.helpers.wheels import ROOT, setup_wheelhouse

NO_MAINTENANCE = ("-c", "maintenance.auto=false")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *NO_MAINTENANCE, *args], cwd=repo, capture_output=True,
                          text=True, check=True).stdout


def fresh_clone(dest: Path) -> Path:
    """A repository at ``dest`` whose one commit holds the checkout's tracked files as they
    are now (edits included): what a clone of this checkout, once committed, would be."""
    dest.mkdir()
    for name in _git(ROOT, "ls-files", "-z").split("\0"):
        source = ROOT / name
        if not name or not os.path.lexists(source):
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest / name, follow_symlinks=False)
    _git(dest, "init", "--quiet")
    _git(dest, "add", "--all")
    _git(dest, "commit", "--quiet", "-m", "fresh clone")
    return dest


def session_venv(clone: Path) -> None:
    """The clone's `.venv` as set-up leaves it, made from this session's packages (a path in
    a .pth file) instead of a registry; newer than pyproject.toml, so set-up keeps it."""
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "session.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    (venv / "bin" / "backport").symlink_to(Path(sys.executable).parent / "backport")
    os.utime(clone / "pyproject.toml", (0, 0))
    (venv / ".installed").touch()


def test_setup_in_a_fresh_clone_changes_no_tracked_file(tmp_path: Path) -> None:
    wheels = setup_wheelhouse()
    clone = fresh_clone(tmp_path / "clone")
    session_venv(clone)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
           "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels),
           "PYTHON": sys.executable}
    done = subprocess.run(["bash", "scripts/setup.sh", "--no-torch"], cwd=clone, env=env,
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "setup: ready" in done.stdout
    assert _git(clone, "status", "--porcelain") == ""
    # it did fill the wheelhouse: backport's dependencies and its build backend, offline
    filled = clone / ".ci" / "wheelhouse"
    assert (filled / ".complete").is_file()
    names = {wheel.name.split("-")[0].lower() for wheel in filled.glob("*.whl")}
    assert {"requests", "pyyaml", "setuptools"} <= names
