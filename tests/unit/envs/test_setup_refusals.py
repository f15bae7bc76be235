"""`env setup` refuses a folder that is not a venv and an interpreter outside one; where venvs go."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.envs.setup import setup_env, venv_dir
from backport.errors import BackportError


def test_setup_refuses_a_directory_that_is_not_a_venv(tmp_path: Path) -> None:
    env = Environment(
        name="broken",
        venv=tmp_path / "v",
        requirements=("--no-index", str(tmp_path / "missing-1.0-py3-none-any.whl")),
    )
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "junk").write_text("x")
    with pytest.raises(BackportError) as info:
        setup_env(env, log=lambda _line: None, use_uv=False)
    assert info.value.code == "env-missing"
    assert "exists but is not a virtual environment" in info.value.message


def test_setup_refuses_interpreter_outside_a_venv(tmp_path: Path) -> None:
    env = Environment(name="odd", python=tmp_path / "python-somewhere")
    assert venv_dir(env) is None
    with pytest.raises(BackportError) as info:
        setup_env(env, log=lambda _line: None)
    assert info.value.code == "env-missing"
    assert "is not <dir>/bin/python" in info.value.message


def test_venv_dir() -> None:
    assert venv_dir(Environment(name="a", venv=Path("/v"))) == Path("/v")
    assert venv_dir(Environment(name="a", python=Path("/e/bin/python3.11"))) == Path("/e")
    assert venv_dir(Environment(name="a", python=Path("/usr/bin/env"))) is None
