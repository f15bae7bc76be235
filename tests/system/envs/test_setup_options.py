"""`no_deps` and `extra_index_urls`, and `env setup --dry-run`, on a local package index.

The index mirrors the torch_npu case in miniature: ``needy`` 1.0 asks for ``tinypkg==1.0+cpu``,
which no index has, while ``tinypkg`` 1.0 is there. Installed with its dependencies it cannot
resolve; installed after tinypkg without them, the environment builds and meets its pins.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.envs.probe import probe
from backport.envs.setup import compatible_platforms, plan_setup, platform_machine, setup_env
from backport.errors import BackportError
from tests.helpers.venvs import venv_with_pip
from tests.helpers.wheels import build_wheel


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A PEP 503 index on disk with tinypkg 1.0 and needy 1.0; the default index is empty."""
    files = tmp_path / "files"
    files.mkdir()
    wheels = [build_wheel(files), build_wheel(files, "needy", "1.0", ("tinypkg==1.0+cpu",))]
    for wheel in wheels:
        project = tmp_path / "simple" / wheel.name.split("-")[0]
        project.mkdir(parents=True)
        (project / "index.html").write_text(
            f'<html><body><a href="{wheel.as_uri()}">{wheel.name}</a></body></html>\n')
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "empty").as_uri())
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    # This index is a folder of the test, not a registry: a run with PIP_NO_INDEX still reads it.
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    return (tmp_path / "simple").as_uri()


def _env(tmp_path: Path, index: str, **fields) -> Environment:
    return Environment(name="npu-like", venv=tmp_path / "venvs" / "npu-like",
                       expect={"tinypkg": "1.0", "needy": "1.0"},
                       extra_index_urls=(index,), **fields)  # fmt: skip


@pytest.mark.slow
def test_no_deps_builds_what_a_plain_install_cannot(tmp_path: Path, index: str) -> None:
    venv_with_pip(tmp_path / "venvs" / "npu-like")  # its creation is tested in test_setup.py
    plain = _env(tmp_path, index, requirements=("tinypkg==1.0", "needy==1.0"))
    with pytest.raises(BackportError) as info:
        setup_env(plain, log=lambda _line: None, use_uv=False)
    assert info.value.code == "env-missing"
    assert "install" in info.value.message and "failed with exit code" in info.value.message

    lines: list[str] = []
    split = _env(tmp_path, index, requirements=("tinypkg==1.0",), no_deps=("needy==1.0",))
    setup_env(split, log=lines.append, use_uv=False)
    packages = probe(split).packages
    assert (packages["tinypkg"], packages["needy"]) == ("1.0", "1.0")
    assert "npu-like: installing needy==1.0 without their dependencies" in lines
    assert any("--no-deps" in line for line in lines)
    assert lines[-1].startswith("npu-like: ready")


def test_the_plan_lists_sources_and_sizes_and_each_dry_run_resolves_again(
    tmp_path: Path, index: str
) -> None:
    env = _env(tmp_path, index, requirements=("tinypkg==1.0",), no_deps=("needy==1.0",))
    action, plan = plan_setup(env)
    assert action.startswith("would create the venv ")
    assert not env.venv.exists()  # type: ignore[union-attr]
    by_name = {p.name: p for p in plan}
    assert set(by_name) == {"tinypkg", "needy"}
    assert by_name["needy"].no_deps and not by_name["tinypkg"].no_deps
    assert by_name["needy"].requires == ("tinypkg==1.0+cpu",)
    for item in plan:
        assert item.source == "local file"
        assert item.size == Path(item.url.removeprefix("file://")).stat().st_size

    # The command, on the same environment: it says what it would install and why.
    project = tmp_path / "project"
    project.mkdir()
    config = project / "branches.yaml"

    def write(requirement: str) -> None:
        config.write_text(f"""\
forge: local
upstream: a/b
fork: c/b
upstream_url: /srv/up.git
fork_url: /srv/fork.git
environments:
  npu-like:
    expect: {{tinypkg: "1.0", needy: "1.0"}}
    requirements: ["{requirement}"]
    no_deps: ["needy==1.0"]
    extra_index_urls: ["{index}"]
branches:
  master: {{env: npu-like}}
""")

    envs = tmp_path / "envs"

    def dry_run() -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "backport", "env", "setup", "--dry-run"],
                              cwd=project, capture_output=True, text=True, timeout=300,
                              check=False, env={**os.environ, "BACKPORT_ENVS": str(envs),
                                                "BACKPORT_CACHE": str(tmp_path / "cache")})
        assert proc.returncode == 0, proc.stderr
        return proc

    write("tinypkg==1.0")
    first = dry_run()
    out = first.stdout
    assert "npu-like: would create the venv " in out
    assert "needy 1.0" in out and "tinypkg 1.0" in out and "local file" in out
    assert ("without dependencies (it asks for tinypkg==1.0+cpu, installed next to "
            "tinypkg 1.0)") in out
    assert "2 distributions, about " in out
    assert not envs.exists()
    # Each dry run resolves again (and says so), and plans the same.
    for run in (first, dry_run()):
        assert run.stderr.startswith(
            "npu-like: resolving tinypkg==1.0, needy==1.0 with pip's dry run …\n")
        assert "npu-like: resolved in " in run.stderr
        assert run.stdout == out


def test_platform_tags() -> None:
    assert platform_machine("manylinux_2_28_aarch64") == "aarch64"
    assert platform_machine("manylinux2014_x86_64") == "x86_64"
    assert platform_machine("linux_aarch64") == "aarch64"
    tags = compatible_platforms("manylinux_2_28_aarch64")
    assert tags[0] == "manylinux_2_28_aarch64" and "manylinux_2_27_aarch64" in tags
    assert tags[-1] == "manylinux2014_aarch64"
    assert compatible_platforms("macosx_11_0_arm64") == ["macosx_11_0_arm64"]
