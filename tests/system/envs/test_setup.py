"""setup_env(): real venvs from offline requirements (a wheel built here), never torch."""

from __future__ import annotations

import platform
import shutil
import sys
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.validate import home_as_tilde
from backport.envs.probe import probe
from backport.envs.setup import setup_env
from backport.errors import BackportError
from tests.helpers.wheels import build_wheel


def uv_modes() -> list:
    modes = [pytest.param(False, id="venv+pip")]
    uv = shutil.which("uv")
    modes.append(pytest.param(True, id="uv", marks=pytest.mark.skipif(
        uv is None, reason="uv is not on PATH")))  # fmt: skip
    return modes


@pytest.mark.slow
@pytest.mark.parametrize("use_uv", uv_modes())
def test_setup_builds_then_skips(tmp_path: Path, use_uv: bool) -> None:
    wheel = build_wheel(tmp_path)
    root = tmp_path / "venvs" / "tiny"
    # A `python:` interpreter that does not exist, no requirements: its venv is created.
    bare = Environment(name="tiny", python=root / "bin" / "python")
    lines: list[str] = []
    setup_env(bare, log=lines.append, use_uv=use_uv)
    assert (root / "pyvenv.cfg").is_file()
    assert probe(bare).python == platform.python_version()
    assert any(line.startswith("tiny: creating ") for line in lines)
    assert lines[-1].startswith("tiny: ready")

    # The same venv (`venv:`) with requirements and a pin: installed into it, then met.
    env = Environment(
        name="tiny",
        venv=root,
        expect={"tinypkg": "1.0"},
        requirements=("--no-index", str(wheel)),
    )
    lines = []
    setup_env(env, log=lines.append, use_uv=use_uv)
    assert env.interpreter.exists()
    assert probe(env).packages["tinypkg"] == "1.0"
    assert lines[0] == "tiny: tinypkg: expected 1.0, not installed; reinstalling the requirements"
    assert lines[-1].startswith("tiny: ready")

    again: list[str] = []
    setup_env(env, log=again.append, use_uv=use_uv)
    assert again == [f"tiny: {home_as_tilde(str(env.interpreter))} is up to date"]

    # A pin the requirements cannot satisfy: reinstalled, then reported as a mismatch.
    wrong = Environment(name="tiny", venv=env.venv, expect={"tinypkg": "2.0"},
                        requirements=env.requirements)  # fmt: skip
    with pytest.raises(BackportError) as info:
        setup_env(wrong, log=lambda _line: None, use_uv=use_uv)
    assert info.value.code == "env-mismatch"
    assert info.value.message == "environment 'tiny' after setup: tinypkg: expected 2.0, found 1.0"

    # An install that fails names the command and pip's last line.
    missing = Environment(name="tiny", venv=env.venv, expect={"tinypkg": "2.0"},
                          requirements=("--no-index", str(tmp_path / "tinypkg-2.0-py3-none-any.whl")))  # fmt: skip
    with pytest.raises(BackportError) as info:
        setup_env(missing, log=lambda _line: None, use_uv=use_uv)
    assert info.value.code == "env-missing"
    assert "failed with exit code" in info.value.message
    assert "install" in info.value.message


def test_setup_leaves_a_foreign_interpreter_alone(tmp_path: Path) -> None:
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    if not base.exists() or (base.parent.parent / "pyvenv.cfg").exists():
        pytest.skip(f"no base interpreter outside a venv at {base}")
    env = Environment(name="sys", python=base, expect={"tinypkg": "1.0"})
    with pytest.raises(BackportError) as info:
        setup_env(env, log=lambda _line: None)
    assert info.value.code == "env-mismatch"
    assert "is not a virtual environment backport may change" in info.value.message
    assert info.value.message.endswith("tinypkg: expected 1.0, not installed")


