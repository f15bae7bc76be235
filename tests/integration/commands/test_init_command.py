"""`backport init`: a starting project from what the package ships, never over a file."""

from __future__ import annotations

from pathlib import Path

import yaml

from backport.config import load_project
from tests.helpers.project import ROOT, run_app, run_cli

WRITTEN = ("branches.yaml", "patches/example-patch.yaml")


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
    assert "next: set GITCODE_TOKEN (your fork of Ascend/pytorch follows its login" in result.out
    assert "backport env setup" in result.out and "backport check" in result.out


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






