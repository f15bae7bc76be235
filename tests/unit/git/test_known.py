"""What a run keeps of its cache (`git/known.py`): only what cannot change during the run."""

from __future__ import annotations

from pathlib import Path

from backport.git.known import Known

FULL = "a" * 40


def test_a_blob_kept_by_a_fixed_name_is_read_again_without_git() -> None:
    known = Known()
    known.keep(f"{FULL}:test/x.py", b"text")
    assert known.blob(Path("/nonexistent"), f"{FULL}:test/x.py") == b"text"
    assert known.reader(Path("/nonexistent")).get(f"{FULL}:test/x.py") == b"text"
    assert known.has(f"{FULL}:test/x.py") and not known.has(f"{FULL}:test/y.py")


def test_a_blob_a_search_missed_is_absent_until_the_next_fetch() -> None:
    known = Known()
    known.searched(found=["3f8e81ec9"], missed=["0123abcde"])
    assert known.has("3f8e81ec9") and not known.absent("3f8e81ec9")
    assert known.absent("0123abcde")
    assert known.blob(Path("/nonexistent"), "0123abcde") is None  # no git asked
    known.fetched()  # the history may hold it now
    assert not known.absent("0123abcde")


def test_patch_ids_and_identity_are_computed_once() -> None:
    known = Known()
    calls: list[str] = []

    def ids() -> set[str]:
        calls.append("ids")
        return {"p1"}

    assert known.patch_ids(b"diff", ids) == {"p1"} == known.patch_ids(b"diff", ids)
    assert known.patch_ids(b"other", ids) == {"p1"}
    assert calls == ["ids", "ids"]  # once per distinct bytes
    read = [{"user.name": "A"}, {"user.name": "B"}]
    assert known.identity(lambda: read.pop(0)) == {"user.name": "A"}
    assert known.identity(lambda: read.pop(0)) == {"user.name": "A"}


def test_a_blob_too_large_to_keep_is_not_kept() -> None:
    known = Known()
    known.keep(FULL, b"x" * ((8 << 20) + 1))
    assert known.has(FULL)  # known to be there, its bytes read again when asked
    assert known.reader(Path("/x")).known is known
