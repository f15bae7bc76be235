"""The credential helpers git is configured with, as ``credential.helper`` values."""

from __future__ import annotations

from pathlib import Path

from backport.git.run import git


def configured_helpers(cwd: Path | None = None) -> list[str]:
    """Every ``credential.helper`` and ``credential.<url>.helper`` value git sees in ``cwd``
    (system, global and, in a repository, its own configuration); none where git has none."""
    found = git(["config", "--get-regexp", r"^credential\..*helper$"], cwd=cwd, check=False)
    return [line.partition(" ")[2] for line in found.stdout.splitlines() if " " in line]
