"""A fetch that fails is the upstream's failure, not four failed branches (issue 49 item 3):
one sentence naming the upstream and git's reason, exit 1, no branch recorded as failed, and
the re-run does every branch. An upstream that lacks objects says so, names what to use
instead, and leaves the cache as it was."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from backport.git.cache import RepoCache
from tests.helpers.project import git, run_app

RUN = ("apply", "--api", "put_metric", "--no-push", "--skip-tests")


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` and a digest of its bytes (symlinks by their target)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): (os.readlink(p) if p.is_symlink() else
                                        hashlib.sha256(p.read_bytes()).hexdigest())
            for p in root.rglob("*") if p.is_symlink() or p.is_file()}


def _cache(sandbox) -> RepoCache:
    return RepoCache(Path(os.environ["BACKPORT_CACHE"]), str(sandbox.upstream))


def test_an_unreachable_upstream_fails_the_run_and_no_branch(sandbox) -> None:
    moved = sandbox.upstream.with_name("elsewhere.git")
    sandbox.upstream.rename(moved)  # the upstream named in branches.yaml is gone
    failed = run_app(sandbox.project, *RUN)
    assert failed.code == 1, failed.out + failed.err
    (error,) = _errors(failed.err)
    assert error.startswith(f"error: cannot reach upstream {sandbox.upstream}: "), error
    assert "does not appear to be a git repository" in error  # git's reason
    status = run_app(sandbox.project, "status", "--json")
    assert status.code == 0, status.out + status.err  # nothing failed, nothing recorded
    assert not (sandbox.project / ".backport" / "runs" / "put_metric" / "journal.json").exists()
    moved.rename(sandbox.upstream)
    again = run_app(sandbox.project, *RUN, "--json")
    assert again.code == 0, again.out + again.err
    branches = again.json()["branches"]
    assert len(branches) == 4 and all(b["commit"] for b in branches), branches


def test_a_fetch_failing_after_a_run_keeps_its_records_as_they_were(sandbox) -> None:
    first = run_app(sandbox.project, *RUN)
    assert first.code == 0, first.out + first.err
    journal = sandbox.project / ".backport" / "runs" / "put_metric" / "journal.json"
    before, status = journal.read_bytes(), run_app(sandbox.project, "status", "--json")
    sandbox.upstream.rename(sandbox.upstream.with_name("elsewhere.git"))
    failed = run_app(sandbox.project, *RUN, "--force")
    assert failed.code == 1 and len(_errors(failed.err)) == 1, failed.err
    assert journal.read_bytes() == before
    assert run_app(sandbox.project, "status", "--json") == status
    assert "failed" not in {b["status"] for b in status.json()["branches"]}


def _lose_a_blob(upstream: Path, branch: str) -> str:
    """A new commit on ``branch`` of the bare ``upstream`` whose new file's blob is then
    removed (a snapshot without some files); the upstream serves no filtered fetch, as a
    plain repository on disk does not. Returns the lost blob's sha."""
    work = upstream.with_name("work")
    git(upstream.parent, "clone", "--quiet", "--branch", branch, str(upstream), str(work))
    (work / "weights.bin").write_bytes(os.urandom(4096))
    git(work, "add", "weights.bin")
    git(work, "commit", "--quiet", "-m", "add weights")
    git(work, "push", "--quiet", "origin", f"HEAD:{branch}")
    blob = git(work, "rev-parse", "HEAD:weights.bin")
    (upstream / "objects" / blob[:2] / blob[2:]).unlink()
    git(upstream, "config", "uploadpack.allowFilter", "false")
    return blob


def test_an_upstream_lacking_objects_says_so_and_leaves_a_new_cache_absent(sandbox) -> None:
    blob = _lose_a_blob(sandbox.upstream, "v2.7.1")
    failed = run_app(sandbox.project, *RUN)
    assert failed.code == 1, failed.out + failed.err
    (error,) = _errors(failed.err)
    assert f"{sandbox.upstream} lacks objects" in error, error
    assert "possible repository corruption on the remote side: it has no object " + blob in error
    assert "use a full clone of it instead (`git clone --mirror`)" in error
    assert not _cache(sandbox).path.exists()  # no half-made cache
    assert not (sandbox.project / ".backport" / "runs" / "put_metric" / "journal.json").exists()


def test_an_upstream_lacking_objects_leaves_the_cache_as_it_was(sandbox) -> None:
    first = run_app(sandbox.project, *RUN)
    assert first.code == 0, first.out + first.err
    cache = _cache(sandbox)
    before = _tree(cache.path)
    _lose_a_blob(sandbox.upstream, "v2.7.1")
    failed = run_app(sandbox.project, *RUN, "--force")
    assert failed.code == 1 and "lacks objects" in failed.err, failed.err
    assert _tree(cache.path) == before  # the cache still fetches blobless, as before
