"""The repository a team keeps for CI (backport's source with its branches.yaml and patches/),
and pip's offline settings, shared by the workflow tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.project import ROOT, edit_config, git


def map_repository(sandbox, dest: Path, *, keep_environments: bool = False) -> tuple[Path, str]:
    """The repository a team keeps: backport's source with its branches.yaml and patches/,
    whose environments are (unless ``keep_environments``) not built on a CI runner. Returns it
    and its head commit."""
    if not keep_environments:
        edit_config(sandbox, lambda data: data.update(environments={  # venvs nobody built here
            name: {k: v for k, v in env.items() if k == "ci"}
            for name, env in data["environments"].items()}))
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "backport", dest / "backport",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(sandbox.config, dest / "branches.yaml")
    shutil.copytree(sandbox.project / "patches", dest / "patches")
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "map and patches")
    return dest, git(dest, "rev-parse", "HEAD")


def pip_offline(wheelhouse: Path) -> dict[str, str]:
    """pip of a workflow's steps: only ``wheelhouse``, no registry, and no byte-compiling of
    what it installs (two thirds of an install's CPU); Python compiles what it imports.
    ``PIP_COMPILE=0``, not ``PIP_NO_COMPILE=1``: pip reads a ``--no-…`` flag's variable as the
    value of its destination, so ``PIP_NO_COMPILE=1`` turns compiling *on*. (``python3 -m
    venv`` drops every ``PIP_*`` variable: its own pip is compiled either way.)"""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_COMPILE": "0"}
