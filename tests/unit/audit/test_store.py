"""What the audit keeps between runs: one file written whole, read back as written; a torn
file or a folder that cannot be written only costs the answers being computed again."""

from __future__ import annotations

from pathlib import Path

from backport.audit.history import Store


def test_what_is_saved_is_read_back(tmp_path: Path) -> None:
    store = Store(tmp_path / "audit" / "repo.json")
    store.patch_ids["a1"] = "p1"
    store.applies["a1:h1"] = True
    store.content["a1:h1"] = "b2"
    store.save()
    again = Store(store.path)
    assert (again.patch_ids, again.applies, again.content) == (
        {"a1": "p1"}, {"a1:h1": True}, {"a1:h1": "b2"})
    assert [p.name for p in store.path.parent.iterdir()] == ["repo.json"]


def test_a_torn_store_starts_empty(tmp_path: Path) -> None:
    path = tmp_path / "repo.json"
    path.write_text('{"version": 1, "patch_ids": {"a1"', encoding="utf-8")
    assert Store(path).patch_ids == {}


def test_a_folder_that_cannot_be_written_keeps_nothing_and_raises_nothing(tmp_path: Path) -> None:
    (tmp_path / "audit").write_text("a file where the folder goes", encoding="utf-8")
    store = Store(tmp_path / "audit" / "repo.json")
    store.patch_ids["a1"] = "p1"
    store.save()
    assert Store(store.path).patch_ids == {}
