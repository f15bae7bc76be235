"""What others do while a backport is under way: upstream commits, new tests, new patch sets."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from tests.helpers.gitrepos import clone, commit_file, format_patch
from tests.helpers.project import git

TEST_FILE = "test/distributed/elastic/metrics/test_metrics_api.py"
CONTEXT = '        self.assertNotIn("null_metric", output)'
CHANGED = '        self.assertNotIn("null_metric", output)  # v2.11.0 reworded this check'


def change_upstream_branch(upstream: Path, branch: str, tmp: Path) -> None:
    """Commit a change to the patch's context lines on one upstream branch."""
    work = tmp / "edit"
    subprocess.run(["git", "clone", "--quiet", "--branch", branch, str(upstream), str(work)],
                   check=True)
    path = work / TEST_FILE
    path.write_text(path.read_text(encoding="utf-8").replace(CONTEXT, CHANGED), encoding="utf-8")
    git(work, "commit", "--quiet", "-am", "v2.11.0: reword a check")
    git(work, "push", "--quiet", "origin", branch)


LAST_CHECK = '        self.assertNotIn("null_metric", output)\n'


def add_patch_set(sandbox, tmp: Path, name: str, new_text) -> None:
    """A second patch set made with `git format-patch` from upstream master's test file."""
    work = clone(sandbox.upstream, tmp / f"author-{name}", branch="master")
    source = (work / TEST_FILE).read_text(encoding="utf-8")
    commit_file(work, TEST_FILE, new_text(source), f"test: {name}")
    folder = sandbox.project / "patches" / name
    format_patch(work, "-1", folder)
    (folder / "patch.yaml").write_text(yaml.safe_dump({
        "api": f"torch.distributed.elastic.metrics.{name}", "issue": 3217, "title": f"test: {name}",
        "tests": [{"path": TEST_FILE, "args": ["-v"]}], "device": "none",
        "branches": ["v2.7.1", "v2.11.0", "v2.12.0", "master"]}), encoding="utf-8")


def advance(sandbox, branch: str, tmp_path: Path) -> None:
    """Someone merges an unrelated commit into upstream ``branch`` (the base moves)."""
    env = {**os.environ, "LANG": "C", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    work = tmp_path / f"advance-{len(list(tmp_path.glob('advance-*')))}"

    def git(*args: str, cwd: Path | None = None) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)

    git("clone", "-q", "--branch", branch, str(sandbox.upstream), str(work))
    (work / "UNRELATED.md").write_text(f"moved {work.name}\n", encoding="utf-8")
    git("add", "UNRELATED.md", cwd=work)
    git("-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "move",
        cwd=work)
    git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", cwd=work)


PLAIN = "def test_plain():\n    assert 1 + 1 == 2\n"


def commit_test(tmp_path: Path, path: str, text: str) -> Path:
    repo = tmp_path / "src"
    repo.mkdir()
    git(repo, "init", "--quiet")
    (repo / "README.md").write_text("x\n", encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "test: add a test")
    return repo
