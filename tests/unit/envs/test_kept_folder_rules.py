"""Where kept warm workers live: a private folder, refused when others can enter it, off on request."""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

from backport.envs.kept import keep_policy, runtime_folder


def test_kept_workers_turn_off_and_live_in_a_private_folder(tmp_path: Path) -> None:
    assert keep_policy({"BACKPORT_KEEP_WORKERS": "0"}) is None
    policy = keep_policy({"BACKPORT_RUNTIME_DIR": str(tmp_path / "rt"),
                          "BACKPORT_WORKER_IDLE": "42"})
    assert policy is not None and (policy.folder, policy.idle) == (tmp_path / "rt", 42.0)


def test_a_folder_others_can_enter_is_refused(tmp_path: Path) -> None:
    from backport.envs.kept import KeptUnavailable, private_folder

    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o755)
    os.chmod(open_folder, 0o755)
    with pytest.raises(KeptUnavailable, match="only this user"):
        private_folder(open_folder)
    assert private_folder(tmp_path / "new").stat().st_mode & 0o777 == 0o700


def test_runtime_folder_without_xdg_runtime_dir_is_tmp_and_quiet(monkeypatch) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("XDG_RUNTIME_DIR is the Linux rule")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # platformdirs' RuntimeDirWarning would raise here
        folder = runtime_folder({})
    assert folder == Path(tempfile.gettempdir()) / f"backport-{os.getuid()}"
    assert runtime_folder({"BACKPORT_RUNTIME_DIR": "/x/y"}) == Path("/x/y")
