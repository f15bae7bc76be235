"""A private folder of kept warm workers for one test, and their end after it."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from backport.envs.kept import stop_kept_workers
from tests.helpers.processes import wait_gone


@contextlib.contextmanager
def private_kept_folder() -> Iterator[Path]:
    """A new folder for kept workers (short on purpose: a Unix socket's path has a limit of
    about 100 bytes); afterwards every worker in it is stopped, and must be gone."""
    folder = Path(tempfile.mkdtemp(prefix="bpk-"))
    os.chmod(folder, 0o700)
    try:
        yield folder
    finally:
        pids = stop_kept_workers(folder)
        gone = [wait_gone(pid) for pid in pids]
        shutil.rmtree(folder, ignore_errors=True)
        assert all(gone), f"kept workers {pids} did not end"
