"""A copy of the real Ascend/pytorch (``BACKPORT_REAL_REPO``) as the tests' upstream and fork."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from backport.demo.sandbox import write_project
from tests.helpers.project import PATCHES, TORCH_PYTHON

MIRROR = Path(os.environ.get("BACKPORT_REAL_REPO") or "/nonexistent")
needs_mirror = pytest.mark.skipif(not MIRROR.is_dir(), reason="BACKPORT_REAL_REPO does not "
                                  "name a copy of Ascend/pytorch")
BRANCHES = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
# The commits by which upstream added its own test_put_metric, and their parents.
UPSTREAM = {"v2.7.1": "7519b4613", "v2.11.0": "4ba012229", "v2.12.0": "33cd429d7",
            "master": "1292bcfa1"}
PRE_STATES = {"v2.7.1": "82ea54ed3", "v2.11.0": "d5bd55141", "v2.12.0": "8c57daccf",
              "master": "c6b207c55"}
TEST_FILE = "test/distributed/elastic/metrics/test_metrics_api.py"


def git_out(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "LANG": "C"}).stdout.strip()


def borrowing(path: Path) -> Path:
    """An empty bare repository that borrows the copy's objects (as a fork on the forge does)."""
    git_out("init", "--quiet", "--bare", str(path))
    (path / "objects" / "info" / "alternates").write_text(
        str((MIRROR / "objects").resolve()) + "\n", encoding="utf-8")
    return path


def real_project(tmp: Path, heads: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """Upstream with the four branches at ``heads``, an empty fork, the shipped patch set."""
    upstream = borrowing(tmp / "upstream.git")
    for branch, ref in heads.items():
        sha = git_out("--git-dir", str(MIRROR), "rev-parse", "--verify", f"{ref}^{{commit}}")
        git_out("--git-dir", str(upstream), "update-ref", f"refs/heads/{branch}", sha)
    git_out("--git-dir", str(upstream), "config", "uploadpack.allowFilter", "true")
    fork = borrowing(tmp / "fork.git")
    project = tmp / "project"
    write_project(project, upstream, fork, PATCHES, TORCH_PYTHON)
    return project, {"BACKPORT_CACHE": str(tmp / "cache")}
