"""The folders a sandbox may write, each named once: a folder inside another is not a root of
its own (a project in /tmp makes no other sandbox than one outside)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from backport.envs import sandbox


def test_a_folder_inside_a_writable_one_is_no_root_of_its_own(tmp_path: Path) -> None:
    outside = tmp_path / "project" / ".backport" / "worktrees"
    temp = os.path.realpath(tempfile.gettempdir())
    inside_temp = Path(temp) / "some-project" / "worktrees"
    roots = sandbox.writable_roots([outside, outside / "put_metric", inside_temp])
    assert os.path.realpath(outside) in roots or os.path.realpath(outside).startswith(temp + "/")
    assert os.path.realpath(outside / "put_metric") not in roots
    assert str(inside_temp) not in roots and temp in roots
    assert roots == tuple(sorted(roots))


def test_the_same_roots_with_or_without_a_folder_in_the_temporary_one() -> None:
    inside_temp = Path(tempfile.gettempdir()) / "p" / ".backport" / "worktrees"
    assert sandbox.writable_roots([inside_temp]) == sandbox.writable_roots()


def test_a_helper_naming_a_folder_covers_nothing(tmp_path: Path) -> None:
    """`credential.helper = store --file ~` names a folder: a store is a file, so nothing of
    the home folder is covered for it; a file it names is."""
    store = tmp_path / "creds"
    store.write_text("https://u:t@gitcode.com\n")
    try:
        sandbox.cover_also([str(tmp_path), str(store)])
        hidden = sandbox.covered_places()
        assert str(store) in hidden and str(tmp_path) not in hidden
    finally:
        sandbox.cover_also([])
