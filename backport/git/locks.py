"""A small advisory file lock (``fcntl.flock``) shared by the git cache and the pipeline."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from backport.errors import BackportError


def _holder(fd: int) -> str:
    """The process id the current holder wrote into the lock file, if any."""
    try:
        data = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return data if data.isdigit() else ""


@contextlib.contextmanager
def file_lock(
    path: Path,
    *,
    wait: bool = True,
    on_wait: Callable[[], None] | None = None,
) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created 0600, parents as needed) for the ``with`` body.

    When another process or another open of the same file holds it: with ``wait`` call
    ``on_wait`` once (e.g. to print "waiting for ...") and block; without ``wait`` raise
    ``BackportError("locked", ...)`` naming the file and the holder's process id.
    The lock is released when the body exits, even on exceptions.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                pid = _holder(fd)
                who = f" by process {pid}" if pid else ""
                raise BackportError(
                    "locked", f"{path} is locked{who}; another backport run is using it."
                ) from None
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
