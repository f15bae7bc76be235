"""git am -3 in sparse worktrees: author kept, 3-way, conflicts, continue/abort, already-applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config.patchfiles import read_patch
from backport.errors import BackportError
from backport.git.apply import (
    abort_series,
    already_applied,
    am_in_progress,
    apply_series,
    continue_series,
)
from backport.git.cache import RepoCache
from tests.helpers import gitrepos as gr
from tests.integration.git.conftest import (
    CONFLICTING,
    PATCH_AUTHOR,
    PATCH_SUBJECT,
    PATCHED,
    SHIFTED,
    TEST_FILE,
    Scenario,
)


def log1(repo: Path, fmt: str, rev: str = "HEAD") -> str:
    return gr.git(repo, "log", "-1", f"--format={fmt}", rev)


def test_am_keeps_author_date_message_one_commit(make_worktree, scenario: Scenario) -> None:
    wt = make_worktree("master")
    base = wt.head()
    result = apply_series(wt, [read_patch(scenario.patch)])
    assert result.status == "applied" and result.conflicts == []
    assert result.head == wt.head() != base
    assert gr.git(wt.path, "rev-list", "--count", f"{base}..HEAD") == "1"
    assert log1(wt.path, "%P") == base
    assert log1(wt.path, "%an <%ae>") == f"{PATCH_AUTHOR[0]} <{PATCH_AUTHOR[1]}>"
    assert log1(wt.path, "%aI") == "2023-03-04T05:06:07+00:00"
    assert log1(wt.path, "%B").strip() == f"{PATCH_SUBJECT}\n\nAdds a put_metric case."
    assert (wt.path / TEST_FILE).read_text() == PATCHED
    assert gr.git(wt.path, "status", "--porcelain") == ""
    assert not am_in_progress(wt)


def test_the_bytes_loaded_are_the_bytes_applied(make_worktree, scenario: Scenario,
                                                tmp_path: Path) -> None:
    # The patch is checked when it loads; a later change of the file on disk (or its removal)
    # must not change what git am applies, on this branch or the next.
    copy = tmp_path / scenario.patch.name
    copy.write_bytes(scenario.patch.read_bytes())
    patch = read_patch(copy)
    copy.write_bytes(scenario.patch.read_bytes().replace(b"+line 21a put_metric",
                                                         b"+line 21a edited later"))
    master = make_worktree("master")
    assert apply_series(master, [patch]).status == "applied"
    assert (master.path / TEST_FILE).read_text() == PATCHED
    copy.unlink()
    older = make_worktree("v2.11.0")
    assert apply_series(older, [patch]).status == "applied"
    assert (older.path / TEST_FILE).read_text() == PATCHED


def test_three_way_merge_on_shifted_context(make_worktree, scenario: Scenario) -> None:
    # v2.7.1 has 3 extra lines on top and a changed context line: plain apply fails.
    wt = make_worktree("v2.7.1")
    plain = gr.git_ok(wt.path, "apply", "--check", str(scenario.patch))
    assert not plain
    result = apply_series(wt, [read_patch(scenario.patch)])
    assert result.status == "applied", result.message
    text = (wt.path / TEST_FILE).read_text()
    assert text.startswith("# header a\n")
    assert "line 17 (v2.7.1)\n" in text and "line 20 put_metric\nline 21\nline 21a" in text


def test_conflict_reported_and_am_left_in_progress(make_worktree, scenario: Scenario) -> None:
    wt = make_worktree("v2.6.0")
    base = wt.head()
    result = apply_series(wt, [read_patch(scenario.patch)])
    assert result.status == "conflict"
    assert result.conflicts == [TEST_FILE]
    assert result.message == (
        f"patch {scenario.patch.name} does not apply: conflict in {TEST_FILE}")
    assert result.head == base
    assert am_in_progress(wt)
    assert "<<<<<<< " in (wt.path / TEST_FILE).read_text()
    with pytest.raises(BackportError):
        apply_series(wt, [read_patch(scenario.patch)])  # refuses to start a second am


def test_continue_after_manual_fix(make_worktree, scenario: Scenario) -> None:
    wt = make_worktree("v2.6.0")
    base = wt.head()
    assert apply_series(wt, [read_patch(scenario.patch)]).status == "conflict"
    # Markers still there: refused, nothing committed.
    refused = continue_series(wt)
    assert refused.status == "conflict"
    assert refused.message == f"conflict markers remain in {TEST_FILE}"
    assert am_in_progress(wt) and wt.head() == base
    # Resolve by hand without staging; continue stages and commits.
    resolved = CONFLICTING.replace("line 20 other\n", "line 20 other put_metric\n")
    (wt.path / TEST_FILE).write_text(resolved)
    done = continue_series(wt)
    assert done.status == "applied", done.message
    assert not am_in_progress(wt)
    assert gr.git(wt.path, "rev-list", "--count", f"{base}..HEAD") == "1"
    assert log1(wt.path, "%an") == PATCH_AUTHOR[0]
    assert log1(wt.path, "%s") == PATCH_SUBJECT
    assert gr.git(wt.path, "show", f"HEAD:{TEST_FILE}") + "\n" == resolved


def test_continue_without_am_is_an_error(make_worktree) -> None:
    wt = make_worktree("master")
    with pytest.raises(BackportError):
        continue_series(wt)


def test_abort_restores_base(make_worktree, scenario: Scenario) -> None:
    wt = make_worktree("v2.6.0")
    base = wt.head()
    apply_series(wt, [read_patch(scenario.patch)])
    abort_series(wt)
    assert not am_in_progress(wt)
    assert wt.head() == base
    assert (wt.path / TEST_FILE).read_text() == CONFLICTING
    abort_series(wt)  # nothing in progress: no-op


def test_already_applied_by_empty_am(make_worktree, scenario: Scenario) -> None:
    wt = make_worktree("v2.12.0")
    base = wt.head()
    result = apply_series(wt, [read_patch(scenario.patch)])
    assert result.status == "already-applied"
    assert result.head == base == wt.head()
    assert not am_in_progress(wt)


def test_already_applied_by_patch_id(cache: RepoCache, scenario: Scenario) -> None:
    heads = cache.fetch(["v2.12.0", "master", "v2.7.1"])
    assert already_applied(cache, heads["v2.12.0"], [read_patch(scenario.patch)]) is True
    assert already_applied(cache, heads["master"], [read_patch(scenario.patch)]) is False
    assert already_applied(cache, heads["v2.7.1"], [read_patch(scenario.patch)]) is False


def test_already_applied_needs_every_patch(
    cache: RepoCache, scenario: Scenario, tmp_path: Path
) -> None:
    work = gr.clone(scenario.upstream, tmp_path / "w", branch="v2.12.0")
    gr.commit_file(work, "README.md", "changed\n", "docs: second patch")
    patches = [read_patch(p) for p in [scenario.patch, *gr.format_patch(work, "HEAD~1..HEAD", tmp_path / "p")]]
    head = cache.fetch(["v2.12.0"])["v2.12.0"]
    assert already_applied(cache, head, patches) is False


def test_series_of_two_patches(make_worktree, scenario: Scenario, tmp_path: Path) -> None:
    work = gr.clone(scenario.upstream, tmp_path / "w", branch="master")
    gr.commit_file(work, TEST_FILE, PATCHED, "first")
    gr.commit_file(work, "README.md", "torch-npu!\n", "second")
    patches = [read_patch(p) for p in gr.format_patch(work, "HEAD~2..HEAD", tmp_path / "p")]
    wt = make_worktree("master", [TEST_FILE, "README.md"])
    base = wt.head()
    result = apply_series(wt, patches)
    assert result.status == "applied"
    assert gr.git(wt.path, "log", "--format=%s", f"{base}..HEAD").splitlines() == [
        "second", "first"]


def test_committer_falls_back_to_patch_author(
    make_worktree, scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wt = make_worktree("v2.7.1")
    empty = tmp_path / "empty.gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    result = apply_series(wt, [read_patch(scenario.patch)])
    assert result.status == "applied", result.message
    assert log1(wt.path, "%cn <%ce>") == f"{PATCH_AUTHOR[0]} <{PATCH_AUTHOR[1]}>"


def test_missing_patch_file(make_worktree, tmp_path: Path) -> None:
    wt = make_worktree("master")
    with pytest.raises(BackportError) as info:
        apply_series(wt, [read_patch(tmp_path / "0001-nope.patch")])
    assert info.value.code == "config"


def test_abbreviated_index_uses_history_for_three_way(
    cache: RepoCache, scenario: Scenario, make_worktree, tmp_path: Path
) -> None:
    # Without --full-index the pre-image blob id is abbreviated; it is found in the history.
    [patch] = gr.format_patch(scenario.work, "master~1..master", tmp_path / "short",
                              full_index=False)
    assert SHIFTED  # v2.7.1 needs the 3-way fallback
    cache.fetch(["master"])
    wt = make_worktree("v2.7.1")
    assert apply_series(wt, [read_patch(patch)]).status == "applied"


def test_three_way_files_named_only_when_the_merge_was_needed(make_worktree,
                                                               scenario: Scenario) -> None:
    clean = apply_series(make_worktree("master"), [read_patch(scenario.patch)])
    assert clean.status == "applied" and clean.merged == []
    merged = apply_series(make_worktree("v2.7.1"), [read_patch(scenario.patch)])
    assert merged.status == "applied" and merged.merged == [TEST_FILE]
