"""What a run keeps of its cache (`git/memo.py`): only what cannot change during the run."""

from __future__ import annotations

from pathlib import Path

from backport.git.cache import RunMemo

FULL = "a" * 40


def test_a_blob_kept_by_a_fixed_name_is_read_again_without_git() -> None:
    memo = RunMemo()
    memo.keep(f"{FULL}:test/x.py", b"text")
    assert memo.blob(Path("/nonexistent"), f"{FULL}:test/x.py") == b"text"
    assert memo.reader(Path("/nonexistent"))(f"{FULL}:test/x.py") == b"text"
    assert memo.has(f"{FULL}:test/x.py") and not memo.has(f"{FULL}:test/y.py")


def test_a_blob_a_search_missed_is_absent_until_the_next_fetch() -> None:
    memo = RunMemo()
    memo.searched(found=["3f8e81ec9"], missed=["0123abcde"])
    assert memo.has("3f8e81ec9") and not memo.absent("3f8e81ec9")
    assert memo.absent("0123abcde")
    assert memo.blob(Path("/nonexistent"), "0123abcde") is None  # no git asked
    memo.fetched()  # the history may hold it now
    assert not memo.absent("0123abcde")


def test_an_answer_is_computed_once_per_key() -> None:
    memo = RunMemo()
    calls: list[str] = []

    def ids() -> frozenset[str]:
        calls.append("ids")
        return frozenset({"p1"})

    assert memo.once(("patch-ids", b"diff"), ids) == {"p1"}
    assert memo.once(("patch-ids", b"diff"), ids) == {"p1"}
    assert memo.once(("patch-ids", b"other"), ids) == {"p1"}
    assert calls == ["ids", "ids"]  # once per distinct bytes
    read = [{"user.name": "A"}, {"user.name": "B"}]
    assert memo.once("identity", lambda: read.pop(0)) == {"user.name": "A"}
    assert memo.once("identity", lambda: read.pop(0)) == {"user.name": "A"}


def test_a_blob_too_large_to_keep_is_not_kept() -> None:
    memo = RunMemo()
    memo.keep(FULL, b"x" * ((8 << 20) + 1))
    assert memo.has(FULL)  # known to be there, its bytes read again when asked
