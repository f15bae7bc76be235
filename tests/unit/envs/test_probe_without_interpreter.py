"""A probe of an interpreter that does not exist says so; the home folder is shown as ~."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.validate import home_as_tilde
from backport.envs.probe import probe
from backport.errors import BackportError


def test_probe_missing_interpreter(tmp_path: Path) -> None:
    missing = Path(os.path.expanduser("~")) / "envs-that-do-not-exist" / "bin" / "python"
    env = Environment(name="torch-2.7.1", python=missing)
    with pytest.raises(BackportError) as info:
        probe(env)
    assert info.value.code == "env-missing"
    assert info.value.message == (
        "environment 'torch-2.7.1': interpreter ~/envs-that-do-not-exist/bin/python does not "
        "exist; run `backport env setup`"
    )


def test_home_as_tilde() -> None:
    home = os.path.expanduser("~")
    assert home_as_tilde(str(Path(home) / "envs" / "x")) == "~/envs/x"
    assert home_as_tilde("/opt/python") == "/opt/python"
    assert home_as_tilde(home + "other/x") == home + "other/x"
