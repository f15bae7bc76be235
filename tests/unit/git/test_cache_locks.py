"""file_lock: exclusive, non-blocking refusal, waiting with a notice."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.git.cache import file_lock


def test_second_holder_is_refused_without_wait(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "run.lock"
    with file_lock(path, wait=False):
        assert path.exists() and (path.stat().st_mode & 0o777) == 0o600
        with pytest.raises(BackportError) as info:
            with file_lock(path, wait=False):
                pass
        assert info.value.code == "locked"
        assert str(path) in info.value.message
    with file_lock(path, wait=False):  # released: free again
        pass


def test_waiter_is_told_and_gets_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    waiting = threading.Event()
    order: list[str] = []

    def second() -> None:
        with file_lock(path, wait=True, on_wait=waiting.set):
            order.append("second")

    with file_lock(path, wait=True):
        thread = threading.Thread(target=second)
        thread.start()
        assert waiting.wait(5)
        time.sleep(0.05)
        order.append("first")
    thread.join(5)
    assert order == ["first", "second"]


def test_released_on_exception(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    with pytest.raises(RuntimeError):
        with file_lock(path, wait=False):
            raise RuntimeError("boom")
    with file_lock(path, wait=False):
        pass
