"""The project's own branches.yaml: the real Ascend/pytorch map, usable from the project root."""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import sys
from pathlib import Path

import pytest
import requests
from packaging.requirements import Requirement

from backport.config import load_branch_map
from backport.envs.setup import resolve
from tests.helpers.project import Result, run_app

ROOT = Path(__file__).resolve().parents[3]
TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
PINS = {  # the seed PR's environments; master shares v2.12.0's
    "v2.7.1": ("2.7.1", "2.7.1.post4"),
    "v2.11.0": ("2.11.0", "2.11.0"),
    "v2.12.0": ("2.12.0", "2.12.0"),
    "master": ("2.12.0", "2.12.0"),
}


def _project_copy(tmp_path: Path) -> Path:
    """The shipped map and patch sets in a folder of their own (runs write .backport/ there)."""
    project = tmp_path / "project"
    project.mkdir()
    text = (ROOT / "branches.yaml").read_text(encoding="utf-8")
    (project / "branches.yaml").write_text(
        text + "fork: maintainer/pytorch\n", encoding="utf-8")
    shutil.copytree(ROOT / "patches", project / "patches")
    return project


def _cli(project: Path, *args: str, env: dict[str, str]) -> Result:
    """The CLI's entry point, run in this process (`run_app`) in ``project``."""
    return run_app(project, *args, env=env)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_shipped_map_is_the_real_one() -> None:
    bm = load_branch_map(ROOT / "branches.yaml", environ={"BACKPORT_ENVS": "/envs"})
    assert (bm.forge, bm.upstream, bm.fork) == ("gitcode", "Ascend/pytorch", "")
    assert bm.fork_url == "" and not bm.fork_note  # nobody else's fork: the token's login names it
    assert bm.with_login("maintainer").fork_url == "https://gitcode.com/maintainer/pytorch.git"
    assert bm.fork_branch.format(slug="put-metric", target="v2.7.1") == "test-put-metric-v2.7.1"
    assert list(bm.targets) == TARGETS
    for target, (torch, torch_npu) in PINS.items():
        env = bm.environments[bm.targets[target].env]
        assert env.expect == {"torch": torch, "torch_npu": torch_npu}
        assert env.interpreter == Path("/envs") / env.name / "bin" / "python"
        wanted = [Requirement(line) for line in (*env.requirements, *env.no_deps)]
        assert any(r.name == "torch" and str(r.specifier) == f"=={torch}" for r in wanted)
        assert any(r.name == "torch_npu" and str(r.specifier) == f"=={torch_npu}" for r in wanted)
        # torch 2.7.1's common_utils imports numpy, which neither wheel brings
        assert any(r.name == "numpy" for r in wanted)
    assert bm.targets["master"].env == bm.targets["v2.12.0"].env


def test_check_offline_passes_without_the_environments(tmp_path: Path) -> None:
    result = _cli(ROOT, "check", "--offline", env={"BACKPORT_ENVS": str(tmp_path / "none")})
    assert result.code == 0, result.out + result.err


def test_apply_without_environments_stops_in_one_sentence(tmp_path: Path) -> None:
    project = _project_copy(tmp_path)
    result = _cli(project, "apply", "--api", "put_metric",
                  env={"BACKPORT_ENVS": str(tmp_path / "none"), "GITCODE_TOKEN": ""})
    assert result.code == 2, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "run `backport env setup`" in lines[0]
    for name in ("torch-2.7.1", "torch-2.11.0", "torch-2.12.0"):
        assert name in lines[0]
    assert result.out == ""


def test_apply_without_network_stops_in_one_sentence_naming_the_url(tmp_path: Path) -> None:
    # Every environment exists, so the run gets as far as the fetch (probing and starting its
    # warm workers alongside it); the fetch fails first, so no environment is used: a plain
    # interpreter stands in for each (none imports torch for a run that never tests).
    envs = tmp_path / "envs"
    for name in ("torch-2.7.1", "torch-2.11.0", "torch-2.12.0"):
        (envs / name / "bin").mkdir(parents=True)
        (envs / name / "bin" / "python").symlink_to(sys.executable)
    project = _project_copy(tmp_path)
    url = f"http://127.0.0.1:{_closed_port()}/Ascend/pytorch.git"
    result = _cli(project, "apply", "--api", "put_metric", "--no-push",
                  env={"BACKPORT_ENVS": str(envs), "BACKPORT_UPSTREAM_URL": url,
                       "BACKPORT_CACHE": str(tmp_path / "cache")})
    assert result.code == 1, result.err
    errors = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and url in errors[0], result.err
    assert "Traceback" not in result.err


def _pypi_unusable() -> str:
    """Why pip cannot ask pypi.org from here ("" when it can): told to use no index (set-up's
    offline runs), or the site does not answer."""
    if os.environ.get("PIP_NO_INDEX", "").strip().lower() not in ("", "0", "false", "no", "off"):
        return "PIP_NO_INDEX is set: pip asks no package index"
    try:
        return "" if requests.head("https://pypi.org/simple/torch-npu/", timeout=5).ok \
            else "pypi.org does not answer"
    except requests.RequestException:
        return "pypi.org is not reachable from here"


_NO_PYPI = _pypi_unusable()


@pytest.mark.skipif(bool(_NO_PYPI), reason=_NO_PYPI or "pypi.org answers")
@pytest.mark.parametrize("target", ["v2.7.1", "v2.11.0", "v2.12.0"])
def test_shipped_environments_resolve_for_aarch64(target: str) -> None:
    """pip's dry run for an aarch64 host (Ascend's usual one) finds every pinned wheel, and there
    each torch_npu asks for exactly the torch the map installs, so aarch64 is not a guess."""
    bm = load_branch_map(ROOT / "branches.yaml", environ={})
    env = bm.environments[bm.targets[target].env]
    # Without dependencies both lists are resolved with --no-deps: asked of pip in one call.
    named = dataclasses.replace(env, requirements=(*env.requirements, *env.no_deps), no_deps=())
    plan = resolve(named, platform="manylinux_2_28_aarch64", python_version="3.11",
                   with_deps=False, sizes=False)
    assert {p.name.lower().replace("-", "_") for p in plan} == {
        Requirement(line).name.lower().replace("-", "_")
        for line in (*env.requirements, *env.no_deps)}
    versions = {p.name.lower().replace("-", "_"): p for p in plan}
    torch, torch_npu = versions["torch"], versions["torch_npu"]
    assert (torch.version, torch_npu.version) == PINS[target]
    assert all("aarch64" in p.url or "none-any" in p.url for p in plan)
    asked = [Requirement(line) for line in torch_npu.requires]
    wanted = next(r for r in asked if r.name == "torch")
    assert wanted.specifier.contains(torch.version)
