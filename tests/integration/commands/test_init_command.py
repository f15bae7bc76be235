"""`backport init`: a starting project from what the package ships, never over a file."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from backport.config import load_project
from backport.demo.sandbox import Sandbox
from tests.helpers.project import ROOT, Result, run_app, run_cli

WRITTEN = ("branches.yaml", "patches/example-patch.yaml")
PATCH = "0001-test-add-put_metric-coverage.patch"


def test_init_writes_the_real_map_and_a_commented_example(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "init", "first")
    assert result.code == 0, result.err
    project = tmp_path / "first"
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == \
        sorted(WRITTEN)
    assert (project / "branches.yaml").read_bytes() == (ROOT / "branches.yaml").read_bytes()
    example = (project / "patches" / "example-patch.yaml").read_text(encoding="utf-8")
    # every line is a comment, and the commented patch.yaml in it is a valid one
    assert all(line.startswith("#") for line in example.splitlines())
    spec = "\n".join(line[2:] for line in example.splitlines() if line.startswith("# ")
                     and ":" in line.split("#")[1] and not line.startswith("#  "))
    assert set(yaml.safe_load(spec)) >= {"api", "issue", "title", "tests", "device", "branches"}
    loaded = load_project(project / "branches.yaml", environ={})
    assert (loaded.patch_sets, loaded.broken) == ({}, {})
    assert "then: set GITCODE_TOKEN (your fork of Ascend/pytorch follows its login" in result.out
    assert "backport env setup" in result.out and "backport apply --api NAME" in result.out
    assert result.out.strip().splitlines()[-1] == "next: cd first && backport check --offline"


def test_init_without_a_folder_starts_the_project_here(tmp_path: Path) -> None:
    result = run_app(tmp_path, "init")
    assert result.code == 0, result.err
    assert all((tmp_path / name).is_file() for name in WRITTEN)
    check = run_app(tmp_path, "check", "--offline", "--json",
                    env={"BACKPORT_ENVS": str(tmp_path / "envs")})
    assert check.code == 0, check.err
    assert not any("fork" in w for w in check.json()["warnings"])
    (fork,) = [f for f in check.json()["findings"] if f["subject"] == "fork"]
    assert fork["detail"] == ("follows the token's login: <token's login>/pytorch "
                              "(offline: not asked)")


def _run_next(cwd: Path, out: str) -> Result:
    """Run the command init's last line names (``next: [cd DIR && ]backport ARGS``) in ``cwd``."""
    last = out.strip().splitlines()[-1]
    assert last.startswith("next: "), out
    command = shlex.split(last.removeprefix("next: "))
    if command[:1] == ["cd"]:
        assert command[2] == "&&", last
        cwd, command = cwd / command[1], command[3:]
    assert command[0] == "backport", last
    return run_app(cwd, *command[1:], env={"BACKPORT_ENVS": str(cwd / "envs")})


@pytest.mark.parametrize("args", [("first",), ("first", "--from-shipped", "put_metric"), ()])
def test_init_ends_with_the_next_command_and_it_works_in_what_init_wrote(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    result = run_app(tmp_path, "init", *args)
    assert result.code == 0, result.err
    follows = _run_next(tmp_path, result.out)
    assert follows.code == 0, follows.out + follows.err


def test_init_from_shipped_put_metric_runs_the_readme_headline(tmp_path: Path,
                                                               built_sandbox: Sandbox) -> None:
    result = run_app(tmp_path, "init", "p", "--from-shipped", "put_metric")
    assert result.code == 0, result.err
    project = tmp_path / "p"
    shipped = ROOT / "patches" / "put_metric"
    for path in shipped.iterdir():
        assert (project / "patches" / "put_metric" / path.name).read_bytes() == path.read_bytes()
    assert f"wrote p/patches/put_metric/{PATCH}" in result.out
    headline = "backport apply --api put_metric"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"`{headline}`" in readme
    # as written, with the upstream's URL pointed at a local stand-in of Ascend/pytorch; a dry
    # run, since it has no token, fork or built environments (it says they are what it lacks)
    env = {"BACKPORT_UPSTREAM_URL": str(built_sandbox.upstream), "HOME": str(tmp_path),
           "BACKPORT_ENVS": str(tmp_path / "envs")}
    dry = run_app(project, *headline.split()[1:], "--dry-run", env=env)
    assert dry.code == 0, dry.out + dry.err
    assert dry.out.count("planned") >= 4 and "needs what this dry run does not" in dry.out


def test_init_names_the_shipped_sets_when_asked_for_another(tmp_path: Path) -> None:
    result = run_app(tmp_path, "init", "--from-shipped", "put_metrics")
    assert result.code == 2
    assert result.err.strip() == ("error: no shipped patch set 'put_metrics' (shipped: "
                                  "put_metric)")
    assert list(tmp_path.iterdir()) == []
