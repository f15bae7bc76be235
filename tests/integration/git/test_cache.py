"""RepoCache against real bare repositories: named heads only, blobless, errors, concurrency."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.git.cache import RepoCache
from tests.helpers import gitrepos as gr
from tests.integration.git.conftest import Scenario


def test_fetch_only_named_heads(cache: RepoCache, scenario: Scenario) -> None:
    heads = cache.fetch(["v2.7.1", "master"])
    assert heads == {b: scenario.heads[b] for b in ("v2.7.1", "master")}
    assert gr.branches_of(cache.path, "refs/remotes/upstream/") == heads
    assert gr.branches_of(cache.path) == {}  # nothing else, no local branches
    # The other branches' commits were never transferred.
    assert not gr.has_object(cache.path, scenario.heads["v2.11.0"])
    assert gr.has_object(cache.path, scenario.heads["v2.7.1"])
    assert not gr.git_ok(cache.path, "rev-parse", "--verify", "--quiet",
                         "refs/remotes/upstream/v2.11.0")


def test_cache_is_blobless_partial_clone(cache: RepoCache, scenario: Scenario) -> None:
    cache.fetch(["v2.7.1"])
    assert gr.git(cache.path, "config", "remote.upstream.promisor") == "true"
    assert gr.git(cache.path, "config", "remote.upstream.partialclonefilter") == "blob:none"
    assert cache.blobless
    assert gr.count_objects(cache.path, "blob") < gr.count_objects(scenario.upstream, "blob")
    assert gr.count_objects(cache.path, "commit") >= 2


def test_second_fetch_updates_and_adds(cache: RepoCache, scenario: Scenario) -> None:
    assert cache.fetch(["v2.11.0"]) == {"v2.11.0": scenario.heads["v2.11.0"]}
    assert cache.fetch(["v2.11.0", "v2.6.0"])["v2.6.0"] == scenario.heads["v2.6.0"]
    cache.ensure()  # idempotent
    assert cache.path.parent == cache.root


def test_fetch_without_server_filter_support(tmp_path: Path) -> None:
    up = gr.make_bare_upstream(tmp_path, {"master": {"a.txt": "a\n"}}, allow_filter=False)
    cache = RepoCache(tmp_path / "cache", str(up))
    heads = cache.fetch(["master"])
    assert heads == {"master": gr.branches_of(up)["master"]}
    assert gr.git(cache.path, "cat-file", "-p", "refs/remotes/upstream/master:a.txt") == "a"


def test_missing_branch(cache: RepoCache, scenario: Scenario) -> None:
    with pytest.raises(BackportError) as info:
        cache.fetch(["master", "v9.9.9"])
    assert info.value.code == "branch-missing"
    assert info.value.message == (
        f"target branch 'v9.9.9' does not exist in {scenario.upstream}.")


def test_unreachable_upstream(tmp_path: Path) -> None:
    cache = RepoCache(tmp_path / "cache", str(tmp_path / "nowhere.git"))
    with pytest.raises(BackportError) as info:
        cache.fetch(["master"])
    assert info.value.code == "upstream-unreachable"
    assert str(tmp_path / "nowhere.git") in info.value.message
    with pytest.raises(BackportError) as info:
        cache.remote_heads(["master"])
    assert info.value.code == "upstream-unreachable"


def test_unreachable_https_url_is_redacted(tmp_path: Path) -> None:
    url = "https://someone:s3cr3t-token@127.0.0.1:9/owner/repo.git"
    cache = RepoCache(tmp_path / "cache", url)
    assert "s3cr3t" not in str(cache.path)
    assert cache.path.name.startswith("127.0.0.1-9-owner-repo-")
    with pytest.raises(BackportError) as info:
        cache.fetch(["master"])
    assert info.value.code == "upstream-unreachable"
    assert "s3cr3t" not in info.value.message
    assert not cache.path.exists()  # a failed first fetch leaves no cache behind
    cache.ensure()
    assert "s3cr3t" not in (cache.path / "config").read_text()




def test_remote_heads_does_not_fetch(cache: RepoCache, scenario: Scenario) -> None:
    heads = cache.remote_heads(["master", "v2.7.1", "v0.0.1"])
    assert heads == {"master": scenario.heads["master"], "v2.7.1": scenario.heads["v2.7.1"],
                     "v0.0.1": None}
    assert not cache.path.exists() or gr.branches_of(cache.path, "refs/remotes/") == {}


def test_concurrent_fetches_from_threads(tmp_path: Path, scenario: Scenario) -> None:
    branches = ["master", "v2.7.1", "v2.11.0", "v2.12.0"]
    # a separate RepoCache object per thread, as parallel branches would have
    fetched, errors = gr.run_in_threads(
        lambda b: RepoCache(tmp_path / "cache", str(scenario.upstream)).fetch([b]), branches)
    results = {k: v for heads in fetched.values() for k, v in heads.items()}
    assert errors == []
    assert results == {b: scenario.heads[b] for b in branches}


def test_dash_branch_cannot_inject_options(cache: RepoCache, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    for name in (f"--upload-pack=touch {marker}", "-h"):
        with pytest.raises(BackportError) as info:
            cache.fetch([name])
        assert info.value.code == "usage"
        with pytest.raises(BackportError):
            cache.remote_heads([name])
    evil = RepoCache(tmp_path / "c2", f"--upload-pack=touch {marker}")
    with pytest.raises(BackportError):
        evil.fetch(["master"])
    assert not marker.exists()
