"""One test's view of the run (``sandbox.test_view``): its temporary folders its own, its
worktree the only writable one with its git files read-only, the other worktrees covered,
and what it reads brought back, never another branch's worktree."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from backport.envs import sandbox


@pytest.fixture
def run_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project with two linked worktrees' folders (``.git`` files naming a cache's git
    folder), its worktrees allowed as a run allows them; the project's root."""
    project = tmp_path / "project"
    admin = project / "cache" / ".git" / "worktrees" / "own"
    admin.mkdir(parents=True)
    (admin / "commondir").write_text("../..\n", encoding="utf-8")
    for name in ("own", "other"):
        tree = project / ".backport" / "worktrees" / "set" / name
        tree.mkdir(parents=True)
        (tree / ".git").write_text(f"gitdir: {admin}\n", encoding="utf-8")
    monkeypatch.setenv("BACKPORT_CACHE", str(project / "cache"))
    sandbox.allow_writes([project / ".backport" / "worktrees"], reads=[project])
    yield project
    sandbox.allow_writes([])


def _pairs(args: list[str]) -> list[tuple[str, str]]:
    return list(zip(args[::2], args[1::2], strict=True))


def test_a_test_writes_its_worktree_alone(run_layout: Path) -> None:
    root = os.path.realpath(run_layout / ".backport" / "worktrees")
    own = os.path.join(root, "set", "own")
    pairs = _pairs(sandbox.test_view(Path(own)))
    assert [p for kind, p in pairs if kind == "--writable"] == [own]
    assert ("--cover", root) in pairs
    assert {p for kind, p in pairs if kind == "--private"} == set(sandbox.temporary_folders())
    visible = [p for kind, p in pairs if kind == "--visible"]
    cache = os.path.realpath(run_layout / "cache" / ".git")
    assert {os.path.join(own, ".git"), os.path.join(cache, "worktrees", "own"), cache,
            os.path.realpath(run_layout)} <= set(visible)


def test_another_worktree_is_never_brought_back(run_layout: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from inside another branch's worktree, or naming it as a read, a test still does
    not see it."""
    other = run_layout / ".backport" / "worktrees" / "set" / "other"
    monkeypatch.chdir(other)
    args = sandbox.test_view(run_layout / ".backport" / "worktrees" / "set" / "own",
                             reads=[other / ".git"])
    assert not [p for p in args if p.startswith(os.path.realpath(other))]
