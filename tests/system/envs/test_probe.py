"""probe(): run the probe script inside real interpreters."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from backport.codec import decode, encode
from backport.config.model import Environment
from backport.envs.model import Probe
from backport.envs.probe import probe
from backport.errors import BackportError

from .conftest import Probed


def test_probe_plain_interpreter(plain_env: Environment) -> None:
    env = Environment(name="plain", python=plain_env.python, expect={"PyYAML": "6", "nope-x": "1"})
    p = probe(env)
    assert p.env_name == "plain"
    assert p.python == platform.python_version()
    assert p.platform and "Linux" in p.platform
    assert p.torch is None and p.torch_npu is None
    assert p.packages["PyYAML"] is not None
    assert p.packages["nope-x"] is None
    assert set(p.packages) >= {"torch", "torch_npu", "expecttest", "numpy"}
    assert p.torch_npu_loads is None and p.torch_npu_error is None
    assert p.npu_count is None and p.npu_model is None


def test_probe_reads_cann_and_visible_devices(plain_env: Environment, tmp_path: Path) -> None:
    home = tmp_path / "cann"
    (home / "compiler").mkdir(parents=True)
    (home / "compiler" / "version.info").write_text("Version=8.0.RC3\nother=1\n")
    env = Environment(
        name="plain",
        python=plain_env.python,
        env={"ASCEND_HOME_PATH": str(home), "ASCEND_RT_VISIBLE_DEVICES": "0,1"},
    )
    p = probe(env)
    assert p.cann == "8.0.RC3"
    assert p.visible_devices == "ASCEND_RT_VISIBLE_DEVICES=0,1"




def test_probe_broken_interpreter(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'boom: no python here' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(BackportError) as info:
        probe(Environment(name="broken", python=fake))
    assert info.value.code == "env-missing"
    assert "boom: no python here" in info.value.message




@pytest.mark.torch
def test_probe_torch_environment(torch_env: Environment, probed: Probed) -> None:
    assert torch_env.expect == {"torch-npu": "2.13.0", "torch": "2.13.0"}
    p = probed(torch_env)  # probe(torch_env), once for the session's tests
    assert p.torch == "2.13.0+cpu"
    assert p.torch_npu == "2.13.0"
    assert p.packages["torch-npu"] == "2.13.0"
    assert p.packages["expecttest"] is not None
    assert p.cann is None
    assert p.torch_npu_loads is False
    assert p.torch_npu_error is not None and "libhccl.so" in p.torch_npu_error
    assert p.torch_npu_error.startswith("ImportError: ")
    assert p.npu_count is None and p.npu_model is None
    assert decode(Probe, encode(p)) == p
