"""The dry-run plan's stored resolutions: kept whole in one owner-only file per key, reused
while young, and a torn or unwritable cache only costs a resolution."""

from __future__ import annotations

import stat
from pathlib import Path

from backport.envs.resolve_cache import MAX_AGE, store_resolution, stored_resolution

ITEMS = [{"metadata": {"name": "torch", "version": "2.13.0"}, "download_info": {"url": "x"}}]


def _slots(cache: Path) -> list[Path]:
    return list((cache / "resolutions").iterdir())


def test_a_stored_resolution_is_reused_while_young(tmp_path: Path) -> None:
    store_resolution(tmp_path, "key-a", ITEMS)
    (slot,) = _slots(tmp_path)
    assert stat.S_IMODE(slot.stat().st_mode) == 0o600
    found = stored_resolution(tmp_path, "key-a")
    assert found is not None and found[0] == ITEMS
    assert stored_resolution(tmp_path, "key-b") is None
    assert stored_resolution(tmp_path, "key-a", now=found[1] + MAX_AGE + 1) is None


def test_a_torn_or_foreign_slot_is_resolved_again(tmp_path: Path) -> None:
    store_resolution(tmp_path, "key-a", ITEMS)
    (slot,) = _slots(tmp_path)
    for text in ('{"key": "', "[1, 2]", '{"created": "soon", "items": []}'):
        slot.write_text(text, encoding="utf-8")
        assert stored_resolution(tmp_path, "key-a") is None


def test_a_cache_that_cannot_be_written_keeps_nothing_and_raises_nothing(tmp_path: Path) -> None:
    (tmp_path / "resolutions").write_text("a file where the folder goes", encoding="utf-8")
    store_resolution(tmp_path, "key-a", ITEMS)
    assert stored_resolution(tmp_path, "key-a") is None
