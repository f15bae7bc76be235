"""Push with lease to a real bare fork; ls-remote."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config.patchfiles import read_patch
from backport.errors import BackportError, ForkDiverged
from backport.git.apply import apply_series
from backport.git.cache import RepoCache, push_branch, remote_sha
from tests.helpers import gitrepos as gr
from tests.integration.git.conftest import Scenario

BRANCH = "test-put-metric-v2.7.1"


@pytest.fixture()
def applied(make_worktree, scenario: Scenario):
    wt = make_worktree("v2.7.1")
    result = apply_series(wt, [read_patch(scenario.patch)])
    assert result.status == "applied"
    return wt


def test_push_creates_branch_then_moves_it_with_lease(
    applied, cache: RepoCache, fork: Path, scenario: Scenario
) -> None:
    assert remote_sha(str(fork), BRANCH) is None
    first = applied.head()
    push_branch(cache.path, str(fork), first, BRANCH, expect=None)
    assert remote_sha(str(fork), BRANCH) == first
    assert gr.branches_of(fork) == {BRANCH: first}  # nothing else was pushed
    assert gr.git(fork, "log", "-1", "--format=%s", BRANCH).startswith("test: add put_metric")
    # Same content again with the right lease: a no-op.
    push_branch(cache.path, str(fork), first, BRANCH, expect=first)
    # A new commit, lease = what we pushed: moves (even non-fast-forward).
    gr.git(applied.path, "commit", "--amend", "--quiet", "-m", "amended")
    second = applied.head()
    push_branch(cache.path, str(fork), second, BRANCH, expect=first)  # the cache holds it
    assert remote_sha(str(fork), BRANCH) == second
    # The upstream was never touched.
    assert gr.branches_of(scenario.upstream) == scenario.heads


def test_push_refuses_when_someone_else_moved_the_branch(
    applied, cache: RepoCache, fork: Path, scenario: Scenario, tmp_path: Path
) -> None:
    ours = applied.head()
    push_branch(cache.path, str(fork), ours, BRANCH, expect=None)
    # Someone else pushes their own commit to the fork branch.
    other = gr.clone(fork, tmp_path / "other", branch=BRANCH)
    theirs = gr.commit_file(other, "THEIRS.md", "mine\n", "their work")
    gr.git(other, "push", "--quiet", "origin", BRANCH)
    gr.git(applied.path, "commit", "--amend", "--quiet", "-m", "our rerun")
    with pytest.raises(BackportError) as info:
        push_branch(cache.path, str(fork), applied.head(), BRANCH, expect=ours)
    assert info.value.code == "fork-diverged"
    assert isinstance(info.value, ForkDiverged)
    assert (info.value.remote, info.value.expected) == (theirs, ours)
    msg = info.value.message
    assert f"fork branch '{BRANCH}' on {fork} was moved by someone else" in msg
    assert f"now at {theirs[:7]}, expected {ours[:7]}" in msg
    assert remote_sha(str(fork), BRANCH) == theirs  # their commit survives
    # Expecting absence while it exists is refused as well.
    with pytest.raises(BackportError) as info:
        push_branch(cache.path, str(fork), applied.head(), BRANCH, expect=None)
    assert info.value.code == "fork-diverged"
    assert isinstance(info.value, ForkDiverged) and info.value.expected is None
    assert "expected absent" in info.value.message
    assert remote_sha(str(fork), BRANCH) == theirs


def test_unreachable_fork(applied, cache: RepoCache, tmp_path: Path) -> None:
    nowhere = str(tmp_path / "missing-fork.git")
    with pytest.raises(BackportError) as info:
        remote_sha(nowhere, BRANCH)
    assert info.value.code == "fork-unreachable"
    assert nowhere in info.value.message
    with pytest.raises(BackportError) as info:
        push_branch(cache.path, nowhere, applied.head(), BRANCH, expect=None)
    assert info.value.code == "fork-unreachable"


def test_token_in_url_never_reaches_messages(applied, cache: RepoCache) -> None:
    url = "https://user:t0ps3cret@127.0.0.1:9/me/pytorch.git"
    for call in (lambda: remote_sha(url, BRANCH),
                 lambda: push_branch(cache.path, url, applied.head(), BRANCH, expect=None)):
        with pytest.raises(BackportError) as info:
            call()
        assert info.value.code == "fork-unreachable"
        assert "t0ps3cret" not in info.value.message


def test_options_cannot_be_injected(applied, cache: RepoCache, fork: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    sha = applied.head()
    for branch in (f"--receive-pack=touch {marker}", "-f", "--delete"):
        with pytest.raises(BackportError) as info:
            push_branch(cache.path, str(fork), sha, branch, expect=None)
        assert info.value.code == "usage"
        with pytest.raises(BackportError):
            remote_sha(str(fork), branch)
    for url in (f"--receive-pack=touch {marker}", f"--upload-pack=touch {marker}"):
        with pytest.raises(BackportError):
            push_branch(cache.path, url, sha, BRANCH, expect=None)
        with pytest.raises(BackportError):
            remote_sha(url, BRANCH)
    with pytest.raises(BackportError):
        push_branch(cache.path, str(fork), "--all", BRANCH, expect=None)
    assert not marker.exists()
    assert gr.branches_of(fork) == {}


def test_rejected_push_keeps_gits_reason(tmp_path: Path) -> None:
    """A blobless cache whose upstream went away: git says why the fork got no pack."""
    upstream = tmp_path / "up.git"
    work = tmp_path / "work"
    work.mkdir()
    gr.git(work, "init", "--quiet")
    for name in ("a.txt", "b.txt"):
        (work / name).write_text(name, encoding="utf-8")
    gr.git(work, "add", ".")
    gr.git(work, "commit", "--quiet", "-m", "base")
    gr.git(tmp_path, "clone", "--quiet", "--bare", str(work), str(upstream))
    gr.git(upstream, "config", "uploadpack.allowFilter", "true")
    blobless = tmp_path / "cache.git"
    gr.git(tmp_path, "clone", "--quiet", "--bare", "--filter=blob:none", upstream.as_uri(),
           str(blobless))
    head = gr.git(blobless, "rev-parse", "HEAD")
    upstream.rename(tmp_path / "moved.git")
    fork = tmp_path / "fork.git"
    gr.git(tmp_path, "init", "--quiet", "--bare", str(fork))
    with pytest.raises(BackportError) as info:
        push_branch(blobless, str(fork), head, BRANCH, expect=None)
    message = info.value.message
    assert "[remote rejected] (unpacker error)" in message
    assert "from promisor remote" in message
    assert "from promisor remote" in info.value.details["output"]
