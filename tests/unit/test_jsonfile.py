"""The one store of the files this tool keeps: written whole or not at all, read with one clear
sentence naming the file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.jsonfile import read_json, write_json


def test_a_document_comes_back_as_written_in_an_owner_only_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "state.json"
    data = {"version": 2, "name": "补丁", "items": [1, 2.5, None, True]}
    write_json(path, data)
    assert read_json(path) == data
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.json"]


def test_a_write_that_fails_before_the_rename_leaves_the_old_file_and_no_temp_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.json"
    write_json(path, {"old": True})

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_json(path, {"new": True})
    assert read_json(path) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_document_json_cannot_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_json(path, {"old": True})
    with pytest.raises(TypeError):
        write_json(path, {"new": object()})
    assert read_json(path) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_torn_file_is_one_sentence_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "journal.json"
    path.write_text('{"version": 2, "bran', encoding="utf-8")
    with pytest.raises(BackportError) as caught:
        read_json(path, what="run journal")
    assert caught.value.code == "config"
    assert str(path) in caught.value.message
    assert "the run journal cannot be read" in caught.value.message
    assert caught.value.message.endswith("move it aside to start over")


def test_a_missing_or_torn_file_gives_the_default_when_one_is_asked(tmp_path: Path) -> None:
    torn = tmp_path / "torn.json"
    torn.write_text("[1, 2", encoding="utf-8")
    assert read_json(tmp_path / "missing.json", None) is None
    assert read_json(torn, {}) == {}
