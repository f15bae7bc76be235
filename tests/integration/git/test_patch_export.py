"""git/patch_export.py against real repositories built in tmp_path: commits exported as a patch set."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.git.patch_export import (
    commits,
    export_patch_set,
    first_subject,
    touched_files,
)

AUTHOR = ("Ada Author", "ada@example.invalid", "2026-03-04T05:06:07+08:00")


def _run(repo: Path, *args: str, date: str = "2026-03-04T05:06:07+08:00") -> str:
    env = dict(os.environ, LANG="C", LC_ALL="C",
               GIT_AUTHOR_NAME=AUTHOR[0], GIT_AUTHOR_EMAIL=AUTHOR[1], GIT_AUTHOR_DATE=date,
               GIT_COMMITTER_NAME="Cy Committer", GIT_COMMITTER_EMAIL="cy@example.invalid",
               GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def _write(repo: Path, rel: str, text: str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """base -> c1 (edit existing test) -> c2 (add new test file + src) -> c3 (rename docs)."""
    r = tmp_path / "repo"
    r.mkdir()
    _run(r, "init", "-q", "-b", "main")
    _write(r, "test/distributed/test_thing.py", "def test_a():\n    assert True\n")
    _write(r, "src/lib.py", "X = 1\n")
    _write(r, "docs/old.md", "# docs\n")
    _run(r, "add", "-A")
    _run(r, "commit", "-q", "-m", "base")
    _run(r, "tag", "base")

    _write(r, "test/distributed/test_thing.py", "def test_a():\n    assert 1 + 1 == 2\n")
    _run(r, "commit", "-q", "-a", "-m", "test: extend thing coverage\n\nLonger body line.",
         date="2026-03-05T10:00:00+08:00")
    _run(r, "tag", "c1")

    _write(r, "test/npu/test_new_api.py", "def test_new():\n    pass\n")
    _write(r, "src/lib.py", "X = 2\n")
    _write(r, "pkg/widget_test.py", "pass\n")
    _run(r, "add", "-A")
    _run(r, "commit", "-q", "-m", "test: add new api test", date="2026-03-06T11:00:00+08:00")
    _run(r, "tag", "c2")

    _run(r, "mv", "docs/old.md", "docs/new.md")
    _run(r, "commit", "-q", "-m", "docs: rename", date="2026-03-07T12:00:00+08:00")
    return r


def test_single_commit_export_keeps_author_date_and_message(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "patches" / "thing"
    written = export_patch_set(repo, "c1", out, force=False)
    assert [p.name for p in written] == ["0001-test-extend-thing-coverage.patch"]
    text = written[0].read_text(encoding="utf-8")
    assert "From: Ada Author <ada@example.invalid>" in text
    assert "Date: Thu, 5 Mar 2026 10:00:00 +0800" in text
    assert "Subject: [PATCH] test: extend thing coverage" in text
    assert "Longer body line." in text
    assert f"From {_run(repo, 'rev-parse', 'c1')} " in text  # the real sha, not zeros
    assert "--- a/test/distributed/test_thing.py" in text
    full_old = _run(repo, "rev-parse", "base:test/distributed/test_thing.py")
    assert f"index {full_old}.." in text  # full ids: git am -3 can fetch the preimage


def test_exported_new_file_applies_with_git_am(repo: Path, tmp_path: Path) -> None:
    written = export_patch_set(repo, "c2", tmp_path / "out", force=False)
    assert "new file mode 100644" in written[0].read_text(encoding="utf-8")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    _run(clone, "checkout", "-q", "c1")
    _run(clone, "am", "-3", "-q", str(written[0]))
    assert (clone / "test/npu/test_new_api.py").read_text() == "def test_new():\n    pass\n"
    assert _run(clone, "log", "-1", "--format=%an|%ae|%aI|%s") == (
        "Ada Author|ada@example.invalid|2026-03-06T11:00:00+08:00|test: add new api test")
    assert _run(clone, "rev-parse", "HEAD^{tree}") == _run(repo, "rev-parse", "c2^{tree}")


def test_range_export_is_numbered_in_order(repo: Path, tmp_path: Path) -> None:
    written = export_patch_set(repo, "base..main", tmp_path / "out", force=False)
    assert [p.name for p in written] == [
        "0001-test-extend-thing-coverage.patch",
        "0002-test-add-new-api-test.patch",
        "0003-docs-rename.patch",
    ]
    assert all(p.parent == (tmp_path / "out").resolve() for p in written)
    assert "[PATCH 2/3]" in written[1].read_text(encoding="utf-8")


def test_a_range_is_resolved_once_in_one_git_process(repo: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ends of ``A..B`` from one ``rev-parse``, and the export reuses them for
    format-patch: three git processes in all (the ends, the commits, the patches)."""
    from backport.git import patch_export

    called: list[str] = []

    def counting(args, **kwargs):  # type: ignore[no-untyped-def]
        called.append(next(a for a in args if not a.startswith("-") and "=" not in a))
        return real(args, **kwargs)

    real = patch_export.git
    monkeypatch.setattr(patch_export, "git", counting)
    written = export_patch_set(repo, "base..main", tmp_path / "out", force=False)
    assert len(written) == 3
    assert called == ["rev-parse", "rev-list", "format-patch"]
    called.clear()
    assert touched_files(repo, "c1..c2") == [
        "pkg/widget_test.py", "src/lib.py", "test/npu/test_new_api.py"]
    assert called == ["rev-parse", "log"]


def test_refuses_existing_patches_unless_forced(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_patch_set(repo, "base..main", out, force=False)
    (out / "notes.txt").write_text("keep me\n")
    with pytest.raises(BackportError) as info:
        export_patch_set(repo, "c1", out, force=False)
    assert info.value.code == "usage"
    assert str(out) in info.value.message
    assert len(list(out.glob("*.patch"))) == 3

    written = export_patch_set(repo, "c1", out, force=True)
    assert sorted(p.name for p in out.glob("*.patch")) == [w.name for w in written]
    assert (out / "notes.txt").read_text() == "keep me\n"


def test_bad_revisions(repo: Path, tmp_path: Path) -> None:
    for rev in ("nope", "--all", "base...main", "main..base", ""):
        with pytest.raises(BackportError) as info:
            export_patch_set(repo, rev, tmp_path / "out", force=False)
        assert info.value.code == "usage", rev
    assert not list((tmp_path).glob("out/*.patch"))


def test_merge_in_range_is_refused(repo: Path, tmp_path: Path) -> None:
    _run(repo, "checkout", "-q", "-b", "side", "c1")
    _write(repo, "side.txt", "side\n")
    _run(repo, "add", "side.txt")
    _run(repo, "commit", "-q", "-m", "side")
    _run(repo, "checkout", "-q", "main")
    _run(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    with pytest.raises(BackportError, match="merge commit"):
        commits(repo, "base..main")


def test_touched_files_single_and_range(repo: Path) -> None:
    assert touched_files(repo, "c1") == ["test/distributed/test_thing.py"]
    assert sorted(touched_files(repo, "c2")) == [
        "pkg/widget_test.py", "src/lib.py", "test/npu/test_new_api.py"]
    everything = touched_files(repo, "base..main")
    assert everything[0] == "test/distributed/test_thing.py"
    assert {"docs/new.md", "test/npu/test_new_api.py"} <= set(everything)
    assert "docs/old.md" not in everything  # renamed away: the range leaves only the new name
    assert len(everything) == len(set(everything))
    assert touched_files(repo, "base") == [
        "docs/old.md", "src/lib.py", "test/distributed/test_thing.py"]  # root commit




def test_first_subject(repo: Path) -> None:
    assert first_subject(repo, "c1") == "test: extend thing coverage"
    assert first_subject(repo, "c1..main") == "test: add new api test"




