"""The credential helpers git is configured with, as a run reads them to hide their files."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.envs.sandbox import helper_paths
from backport.git.run import configured_helpers


def test_global_and_url_helpers_are_read_and_name_their_files(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    config = tmp_path / "gitconfig"
    config.write_text("[credential]\n\thelper = store --file /srv/a\n"
                      '[credential "https://gitcode.com"]\n\thelper = cache --socket /run/s\n',
                      encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    helpers = configured_helpers(tmp_path)
    assert helpers == ["store --file /srv/a", "cache --socket /run/s"]
    assert [p for h in helpers for p in helper_paths(h)] == ["/srv/a", "/run/s"]


def test_no_helper_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = x\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    assert configured_helpers(tmp_path) == []
