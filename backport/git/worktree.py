"""One sparse worktree per target branch, checked out from the cache repository on a local
branch scoped by the folder that owns it (:func:`cache_branch`); removed with its branch, or
discarded unread where code of the branch ran in it (:meth:`Worktree.discard`)."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from backport.errors import BackportError
from backport.git.cache import RepoCache, RunMemo, repo_lock
from backport.git.run import GitOutput, check_branch_name, git


def sparse_pattern(path: str) -> str:
    """A non-cone sparse-checkout pattern matching exactly ``path`` from the root."""
    clean = path.strip().lstrip("/")
    if not clean or clean.startswith("../") or "/../" in clean:
        raise BackportError("usage", f"invalid path {path!r} for a sparse checkout.")
    escaped = "".join("\\" + ch if ch in "\\*?[" else ch for ch in clean)
    if escaped.startswith("!"):
        escaped = "\\" + escaped
    return "/" + escaped


def cache_branch(owner: Path, name: str) -> str:
    """``backport/<hash of owner>/<name>``: folders sharing a cache never check out one branch."""
    digest = hashlib.sha256(str(Path(owner).expanduser().absolute()).encode("utf-8")).hexdigest()
    return f"backport/{digest[:12]}/{name}"


def forget_owner(repo: Path, owner: Path) -> None:
    """Forget the worktrees and branches of ``owner``, a folder removed with them."""
    with repo_lock(repo):
        git(["worktree", "prune"], cwd=repo)
        refs = git(["for-each-ref", "--format=%(refname)",
                    f"refs/heads/{cache_branch(owner, '')}"], cwd=repo).stdout.split()
        if refs:
            git(["update-ref", "--stdin"], cwd=repo,
                stdin="".join(f"delete {ref}\n" for ref in refs).encode("utf-8"))


def _registered(repo: Path) -> list[Path]:
    """Paths of the linked worktrees registered in ``repo``."""
    out = git(["worktree", "list", "--porcelain"], cwd=repo)
    return [Path(line[len("worktree "):]) for line in out.stdout.splitlines()
            if line.startswith("worktree ")]


def _gitdir_of(path: Path) -> Path | None:
    """The private git folder ``path/.git``'s ``gitdir:`` line names."""
    try:
        first = (path / ".git").read_text(encoding="utf-8").splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    gitdir = first.removeprefix("gitdir: ")
    return (path / gitdir.strip()).resolve() if gitdir != first else None


def _linked_worktree(path: Path) -> tuple[Path, str | None] | None:
    """The shared git folder and HEAD's branch of a linked worktree, read from git's files."""
    own = _gitdir_of(path)
    try:
        if own is None:
            return None
        back = Path((own / "gitdir").read_text(encoding="utf-8").strip())
        common = (own / (own / "commondir").read_text(encoding="utf-8").strip()).resolve()
        head = (own / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not (_same_file(back, path / ".git") and (common / "HEAD").is_file()
            and own.parent == common / "worktrees"):
        return None
    if head.startswith("ref: "):
        return common, _branch(head[len("ref: "):])
    return (common, None) if len(head) in (40, 64) else None


def _branch(ref: str) -> str | None:
    return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None


def _retry_writable(func, name: str, _exc: object) -> None:
    """`shutil.rmtree`'s retry with the folder made writable (a test may have locked it)."""
    os.chmod(os.path.dirname(name), 0o700)
    if os.path.isdir(name) and not os.path.islink(name):
        os.chmod(name, 0o700)
    func(name)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


@dataclass
class Worktree:
    """A linked worktree of the cache repository ``repo`` (``memo``: the cache's)."""

    path: Path
    repo: Path
    branch: str | None = None
    memo: RunMemo = field(default_factory=RunMemo, repr=False, compare=False)

    @classmethod
    def create(cls, cache: RepoCache, path: Path, branch: str, base_sha: str,
               sparse_paths: Sequence[str] | None) -> Worktree:
        """Check out ``base_sha`` at ``path`` on branch ``branch`` (``sparse_paths`` only)."""
        check_branch_name(branch)
        path = Path(path).expanduser().absolute()
        cache.ensure()
        patterns = [sparse_pattern(p) for p in sparse_paths or ()]
        # Detached, the branch made by the checkout: `add -B` would start two more processes.
        add = ["worktree", "add", "--quiet", "--no-checkout", "--detach", "--", str(path),
               base_sha]
        with repo_lock(cache.path):
            if not cache.memo.pruned:
                git(["worktree", "prune"], cwd=cache.path)
                cache.memo.pruned = True
            path.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(path) or not git(add, cwd=cache.path, check=False).ok:
                # Forget or delete whatever worktree an earlier run left at ``path``.
                git(["worktree", "prune"], cwd=cache.path)
                if any(_same_file(p, path) and p != cache.path for p in _registered(cache.path)):
                    git(["worktree", "remove", "--force", "--force", "--", str(path)],
                        cwd=cache.path)
                if path.is_symlink() or path.is_file():
                    raise BackportError("git", f"{path} exists and is not a worktree; move it "
                                               "away.")
                if path.is_dir():
                    if any(path.iterdir()) and not (path / ".git").is_file():
                        raise BackportError("git", f"{path} exists and is not a backport "
                                                   "worktree; move it away.")
                    shutil.rmtree(path)
                    git(["worktree", "prune"], cwd=cache.path)
                git(add, cwd=cache.path)
            if patterns:
                git(["sparse-checkout", "set", "--no-cone", "--", *patterns], cwd=path)
        git(["checkout", "--quiet", "--no-track", "-B", branch], cwd=path, env=cache.env)
        return cls(path=path, repo=cache.path, branch=branch, memo=cache.memo)

    @classmethod
    def open(cls, path: Path) -> Worktree:
        """The worktree at ``path``."""
        path = Path(path).expanduser().absolute()
        if not (path / ".git").exists():
            raise BackportError("git", f"{path} is not a git worktree.")
        linked = _linked_worktree(path)
        if linked is None:
            out = git(["rev-parse", "--show-toplevel", "--git-common-dir"], cwd=path, check=False)
            lines = out.stdout.splitlines() if out.ok else []
            if len(lines) != 2 or not _same_file(Path(lines[0]), path):
                raise BackportError("git", f"{path} is not a git worktree.")
            ref = git(["symbolic-ref", "--quiet", "HEAD"], cwd=path, check=False)
            linked = (path / lines[1]).resolve(), _branch(ref.stdout.strip())
        return cls(path=path, repo=linked[0], branch=linked[1])

    def git(self, args: Sequence[str], **kwargs) -> GitOutput:
        """Run git in this worktree (see :func:`backport.git.run.git`)."""
        return git(args, cwd=self.path, **kwargs)

    def head(self) -> str:
        """The sha of HEAD."""
        return self.git(["rev-parse", "--verify", "HEAD^{commit}"]).stdout.strip()

    @functools.cached_property
    def own_dir(self) -> Path:
        """This worktree's private git folder (where ``git am`` keeps its state)."""
        return _gitdir_of(self.path) or Path(
            self.git(["rev-parse", "--absolute-git-dir"]).stdout.strip()).resolve()

    @staticmethod
    def discard(repo: Path, path: Path, branch: str) -> None:
        """Delete a worktree and its branch reading nothing in it (a branch's code ran there)."""
        with repo_lock(repo):
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.is_dir():
                shutil.rmtree(path, onerror=_retry_writable)
            git(["worktree", "prune"], cwd=repo)
            git(["branch", "--quiet", "-D", "--", branch], cwd=repo, check=False)

    def remove(self) -> None:
        """Delete the worktree (even mid ``git am``) and its branch, under the cache lock."""
        if not self.repo.is_dir():
            if self.path.is_dir() and (self.path / ".git").is_file():
                shutil.rmtree(self.path)
            return
        remove = ["worktree", "remove", "--force", "--force", "--", str(self.path)]
        delete = ["branch", "--quiet", "-D", "--", self.branch or ""]
        with repo_lock(self.repo):
            # Mostly it is there, registered: one `worktree remove` does it; else a leftover.
            if not (self.path.is_dir() and git(remove, cwd=self.repo, check=False).ok):
                if self.path.exists() and any(_same_file(p, self.path)
                                              for p in _registered(self.repo)):
                    git(remove, cwd=self.repo)
                elif self.path.is_dir() and (self.path / ".git").is_file():
                    shutil.rmtree(self.path)
                git(["worktree", "prune"], cwd=self.repo)
            if self.branch and not git(delete, cwd=self.repo, check=False).ok:
                # Not there (nothing to do), or held by a stale registration: pruned, then again.
                git(["worktree", "prune"], cwd=self.repo)
                if git(["rev-parse", "--verify", "--quiet", f"refs/heads/{self.branch}"],
                       cwd=self.repo, check=False).ok:
                    git(delete, cwd=self.repo)
