"""Two project folders on one repository cache: their worktrees do not collide."""

from __future__ import annotations

import shutil

from tests.helpers.project import git, run_app


def test_two_project_folders_share_a_cache_and_a_deleted_one_is_pruned(sandbox, tmp_path):
    # One branch: the folders' worktrees of it would collide in the cache as any would.
    second = tmp_path / "second"
    shutil.copytree(sandbox.project, second)
    cache = {"BACKPORT_CACHE": str(tmp_path / "shared-cache")}
    first = run_app(sandbox.project, "apply", "--api", "put_metric", "--branch", "master", "--no-push", "--skip-tests",
                    env=cache)
    assert first.code == 0, first.err
    other = run_app(second, "apply", "--api", "put_metric", "--branch", "master", "--no-push", "--skip-tests", env=cache)
    assert other.code == 0, other.err
    assert "already checked out" not in other.err

    # The first folder goes away with its worktrees; the cache still lists them until pruned.
    shutil.rmtree(sandbox.project)
    again = run_app(second, "apply", "--api", "put_metric", "--branch", "master", "--no-push", "--skip-tests", "--force",
                    env=cache)
    assert again.code == 0, again.err
    third = tmp_path / "third"
    shutil.copytree(second, third)
    shutil.rmtree(third / ".backport")
    fresh = run_app(third, "apply", "--api", "put_metric", "--branch", "master", "--no-push", "--skip-tests", env=cache)
    assert fresh.code == 0, fresh.err
    (repo,) = (tmp_path / "shared-cache").glob("*-*[!k]")  # the bare repository, not its .lock
    listed = git(repo, "worktree", "list", "--porcelain")
    assert str(sandbox.project) not in listed
    assert str(second) in listed and str(third) in listed
