"""The tree a patch series makes on a base, computed afresh in a temporary index (no worktree,
nothing of an earlier run read): what a publish step compares the tested commit with."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Generator, Iterable, Sequence
from pathlib import Path

from backport.config.patchfiles import Patch
from backport.git.run import GitOutput, failure, git, token_git

Run = Callable[..., GitOutput]  # one git call: (args, env, stdin=None)


def fresh_tree(repo: Path, base: str, patches: Sequence[Patch], *,
               urls: Sequence[str] | None = None) -> str | None:
    """The tree of ``patches`` applied in order on ``base`` (``git apply --cached --3way`` of
    each file's bytes into a new index, as ``git am -3`` would); None when one does not apply.
    ``urls``: see `fresh_trees`."""
    trees = fresh_trees(repo, base, [patches], urls=urls)
    try:
        return next(trees)
    finally:
        trees.close()  # the temporary index goes now


def fresh_trees(repo: Path, base: str, serieses: Iterable[Sequence[Patch]], *,
                urls: Sequence[str] | None = None) -> Generator[str | None, None, None]:
    """`fresh_tree` of each of ``serieses`` on the same ``base``, in order: ``base`` is read
    into an index once, and each series starts from a copy of it.

    The index lies in a private folder inside ``repo``, never in a temp folder a test could
    write. With ``urls`` (the upstream's, for the blobs a blobless cache fetches on the way)
    every git process is sealed (`token_git`): the publish step's check holds the token.
    """
    def run(args: list[str], env: dict[str, str], stdin: bytes | None = None) -> GitOutput:
        if urls is None:
            return git(args, cwd=repo, env=env, stdin=stdin, check=False)
        return token_git(args, repo=repo, urls=urls, env=env, stdin=stdin, check=False)

    with tempfile.TemporaryDirectory(prefix="backport-fresh-", dir=repo) as tmp:
        pristine, index = Path(tmp) / "base", Path(tmp) / "index"
        read = run(["read-tree", base], {"GIT_INDEX_FILE": str(pristine)})
        if not read.ok:
            raise failure(read, cwd=repo)
        env = {"GIT_INDEX_FILE": str(index)}
        for patches in serieses:
            shutil.copyfile(pristine, index)
            yield _apply_all(run, env, patches)


def _apply_all(run: Run, env: dict[str, str], patches: Sequence[Patch]) -> str | None:
    for patch in patches:
        if not run(["apply", "--cached", "--3way", "-"], env, patch.data).ok:
            return None
    tree = run(["write-tree"], env)  # fails on a conflict left
    return tree.stdout.strip() if tree.ok else None


def tree_of(repo: Path, commit: str, *, urls: Sequence[str] | None = None) -> str:
    """The tree of ``commit`` in ``repo`` (sealed with ``urls``, as `fresh_trees`)."""
    args = ["rev-parse", f"{commit}^{{tree}}"]
    if urls is None:
        return git(args, cwd=repo).stdout.strip()
    return token_git(args, repo=repo, urls=urls).stdout.strip()
