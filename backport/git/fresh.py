"""The tree a patch series makes on a base, computed afresh in a temporary index (no worktree,
nothing of an earlier run read): what a publish step compares the tested commit with."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from backport.config.patchfiles import Patch
from backport.git.run import git


def fresh_tree(repo: Path, base: str, patches: Sequence[Patch]) -> str | None:
    """The tree of ``patches`` applied in order on ``base`` (``git apply --cached --3way`` of
    each file's bytes into a new index, as ``git am -3`` would); None when one does not apply."""
    with tempfile.TemporaryDirectory(prefix="backport-fresh-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(["read-tree", base], cwd=repo, env=env)
        for patch in patches:
            out = git(["apply", "--cached", "--3way", "-"], cwd=repo, env=env, stdin=patch.data,
                      check=False)
            if not out.ok:
                return None
        tree = git(["write-tree"], cwd=repo, env=env, check=False)  # fails on a conflict left
        return tree.stdout.strip() if tree.ok else None


def tree_of(repo: Path, commit: str) -> str:
    return git(["rev-parse", f"{commit}^{{tree}}"], cwd=repo).stdout.strip()
