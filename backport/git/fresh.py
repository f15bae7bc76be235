"""The tree a patch series makes on a base, computed afresh in a temporary index (no worktree,
nothing of an earlier run read): what a publish step compares the tested commit with."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Generator, Iterable, Sequence
from pathlib import Path

from backport.config.patchfiles import Patch
from backport.git.run import git


def fresh_tree(repo: Path, base: str, patches: Sequence[Patch]) -> str | None:
    """The tree of ``patches`` applied in order on ``base`` (``git apply --cached --3way`` of
    each file's bytes into a new index, as ``git am -3`` would); None when one does not apply."""
    trees = fresh_trees(repo, base, [patches])
    try:
        return next(trees)
    finally:
        trees.close()  # the temporary index goes now


def fresh_trees(repo: Path, base: str,
                serieses: Iterable[Sequence[Patch]]) -> Generator[str | None, None, None]:
    """`fresh_tree` of each of ``serieses`` on the same ``base``, in order: ``base`` is read
    into an index once, and each series starts from a copy of it."""
    with tempfile.TemporaryDirectory(prefix="backport-fresh-") as tmp:
        pristine, index = Path(tmp) / "base", Path(tmp) / "index"
        git(["read-tree", base], cwd=repo, env={"GIT_INDEX_FILE": str(pristine)})
        env = {"GIT_INDEX_FILE": str(index)}
        for patches in serieses:
            shutil.copyfile(pristine, index)
            yield _apply_all(repo, env, patches)


def _apply_all(repo: Path, env: dict[str, str], patches: Sequence[Patch]) -> str | None:
    for patch in patches:
        out = git(["apply", "--cached", "--3way", "-"], cwd=repo, env=env, stdin=patch.data,
                  check=False)
        if not out.ok:
            return None
    tree = git(["write-tree"], cwd=repo, env=env, check=False)  # fails on a conflict left
    return tree.stdout.strip() if tree.ok else None


def tree_of(repo: Path, commit: str) -> str:
    return git(["rev-parse", f"{commit}^{{tree}}"], cwd=repo).stdout.strip()
