"""Good configurations load into the right dataclasses."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from backport.config import load_branch_map, load_patch_set, load_project
from backport.config.model import DEFAULT_TEST_TIMEOUT, CiPlacement, Environment, PrOptions, Target
from backport.config.model import TestSpec as Spec
from backport.errors import ConfigError
from tests.helpers.config_samples import (
    BRANCHES_YAML,
    PATCH_YAML,
    TEST_FILE,
    make_patch,
    write_project,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_branch_map_fields(tmp_path: Path, home: Path) -> None:
    config = write_project(tmp_path)
    bm = load_branch_map(config, environ={})
    assert bm.path == config
    assert (bm.forge, bm.upstream, bm.fork) == ("local", "Ascend/pytorch", "lgxxx/pytorch")
    assert bm.fork_branch == "test-{slug}-{target}"
    assert bm.upstream_url == str(tmp_path / "sandbox" / "upstream.git")
    assert bm.fork_url == str(tmp_path / "sandbox" / "fork.git")
    assert bm.api_url == ""
    assert bm.web_url == "https://gitcode.com"
    assert list(bm.targets) == ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
    assert bm.targets["master"] == Target(name="master", env="torch-2.12.0")
    assert bm.environments["torch-2.12.0"] == Environment(
        name="torch-2.12.0",
        python=home / "envs" / "torch-2.12.0" / "bin" / "python",
        expect={"torch": "2.12.0", "torch_npu": "2.12.0.rc1"},
        requirements=("torch==2.12.0", "torch_npu==2.12.0.rc1", "expecttest"),
        timeout=DEFAULT_TEST_TIMEOUT,
        ci=CiPlacement(runs_on=("self-hosted", "torch-2.12.0")),  # no `ci:` key: the default
    )
    old = bm.environments["torch-2.7.1"]
    assert old.venv == tmp_path / "envs" / "torch-2.7.1"
    assert old.interpreter == tmp_path / "envs" / "torch-2.7.1" / "bin" / "python"
    assert old.expect == {"torch": "2.7.1"}  # unquoted 2.7.1 is a string in YAML
    assert old.env == {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "EXTRA": "x y"}
    assert old.timeout == 90.0
    assert bm.pr == PrOptions(
        labels=("backport", "test"), reviewers=("alice",), comment="/ci-pytorch"
    )
    assert bm.fork_branch.format(slug="put-metric", target="v2.7.1") == "test-put-metric-v2.7.1"


def test_gitcode_defaults(tmp_path: Path) -> None:
    config = tmp_path / "branches.yaml"
    config.write_text(
        "forge: gitcode\nupstream: Ascend/pytorch\nfork: lgxxx/pytorch\n"
        "environments: {e: {python: /usr/bin/python3}}\nbranches: {master: {env: e}}\n"
    )
    bm = load_branch_map(config, environ={})
    assert bm.upstream_url == "https://gitcode.com/Ascend/pytorch.git"
    assert bm.fork_url == "https://gitcode.com/lgxxx/pytorch.git"
    assert bm.api_url == "https://api.gitcode.com/api/v5"
    assert bm.fork_branch == "test-{slug}-{target}"
    assert bm.pr == PrOptions()
    assert bm.issue_url(3216) == "https://gitcode.com/Ascend/pytorch/issues/3216"


def test_environment_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_project(tmp_path)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    environ = {
        "BACKPORT_UPSTREAM_URL": "file:///srv/upstream.git",
        "BACKPORT_FORK_URL": "rel/fork.git",  # relative to the working directory
        "BACKPORT_API_URL": "http://127.0.0.1:8080/api/v5/",
    }
    bm = load_branch_map(config, environ=environ)
    assert bm.upstream_url == "file:///srv/upstream.git"
    assert bm.fork_url == str(work / "rel" / "fork.git")
    assert bm.api_url == "http://127.0.0.1:8080/api/v5"


def test_empty_environment_variable_is_ignored(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    bm = load_branch_map(config, environ={"BACKPORT_FORK_URL": "  "})
    assert bm.fork_url == str(tmp_path / "sandbox" / "fork.git")


def test_local_forge_urls_from_environment_only(tmp_path: Path) -> None:
    config = tmp_path / "branches.yaml"
    config.write_text(
        "forge: local\nupstream: a/b\nfork: c/b\n"
        "environments: {e: {python: ./py}}\nbranches: {master: {env: e}}\n"
    )
    bm = load_branch_map(
        config, environ={"BACKPORT_UPSTREAM_URL": "/x/up.git", "BACKPORT_FORK_URL": "/x/fork.git"}
    )
    assert (bm.upstream_url, bm.fork_url, bm.api_url) == ("/x/up.git", "/x/fork.git", "")
    assert bm.environments["e"].python == tmp_path / "py"


def test_web_url_drives_default_urls(tmp_path: Path) -> None:
    config = tmp_path / "branches.yaml"
    config.write_text(
        "forge: gitcode\nupstream: a/b\nfork: c/b\nweb_url: https://git.example.org/\n"
        "environments: {e: {python: py}}\nbranches: {master: {env: e}}\n"
    )
    bm = load_branch_map(config, environ={})
    assert bm.web_url == "https://git.example.org"
    assert bm.upstream_url == "https://git.example.org/a/b.git"


def test_aliases_and_merge_keys(tmp_path: Path) -> None:
    config = tmp_path / "branches.yaml"
    config.write_text(
        "forge: local\nupstream: a/b\nfork: c/b\nupstream_url: /u\nfork_url: /f\n"
        "environments:\n"
        "  base: &base {python: /py, timeout: 10, env: {A: '1'}}\n"
        "  other:\n    <<: *base\n    timeout: 20\n"
        "branches: {master: {env: base}, dev: {env: other}}\n"
    )
    bm = load_branch_map(config, environ={})
    assert bm.environments["other"] == Environment(
        name="other", python=Path("/py"), env={"A": "1"}, timeout=20.0,
        ci=CiPlacement(runs_on=("self-hosted", "other")),
    )


def test_patch_set_fields(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    pdir = tmp_path / "patches" / "put_metric"
    (pdir / "body.md").write_text("## hand-written\n", encoding="utf-8")
    bm = load_branch_map(config, environ={})
    ps = load_patch_set(pdir, bm)
    assert ps.name == "put_metric" and ps.slug == "put-metric"
    assert ps.dir == pdir
    assert ps.api == "torch.distributed.elastic.metrics.put_metric"
    assert ps.issues == (3216,)
    assert ps.title == "test: add put_metric coverage"
    assert ps.tests == (Spec(path=TEST_FILE, args=("-v",)),)
    assert ps.device == "none"
    assert ps.branches == ("v2.7.1", "v2.11.0", "v2.12.0", "master")
    assert tuple(p.path for p in ps.patches) == (pdir / "0001-test-add-put_metric-coverage.patch",)
    assert ps.patches[0].data == (pdir / "0001-test-add-put_metric-coverage.patch").read_bytes()
    assert ps.variants == {}
    assert ps.touched_paths == {t: (TEST_FILE,) for t in ps.branches}
    assert ps.body == "## hand-written\n"
    assert ps.pr == bm.pr


def test_patch_set_options(tmp_path: Path) -> None:
    patch_yaml = (
        "api: torch.x\nissue: '#3216'\ntitle: t\n"
        "tests: [./test//a.py, {path: test/b.py, args: [-k, 5]}]\n"
        "device: npu\nbranches: [master, v2.7.1]\n"
        "pr: {labels: [only], draft: true}\n"
    )
    config = write_project(tmp_path, patch_yaml=patch_yaml)
    bm = load_branch_map(config, environ={})
    ps = load_patch_set(tmp_path / "patches" / "put_metric", bm)
    assert ps.issues == (3216,)
    assert ps.tests == (Spec("test/a.py"), Spec("test/b.py", ("-k", "5")))
    assert ps.device == "npu"
    assert ps.branches == ("v2.7.1", "master")  # branches.yaml order
    assert ps.pr == PrOptions(
        labels=("only",), reviewers=("alice",), comment="/ci-pytorch", draft=True
    )
    assert ps.body is None
    assert ps.paths_for("master") == tuple(sorted({TEST_FILE, "test/a.py", "test/b.py"}))


def test_variants_per_target(tmp_path: Path) -> None:
    branches = BRANCHES_YAML.replace(
        "  master:  {env: torch-2.12.0}\n", "  release/v1: {env: torch-2.12.0}\n"
    )
    patch_yaml = PATCH_YAML.replace("branches: [v2.7.1, v2.11.0, v2.12.0, master]\n", "")
    config = write_project(tmp_path, branches=branches, patch_yaml=patch_yaml)
    pdir = tmp_path / "patches" / "put_metric"
    (pdir / "v2.7.1").mkdir()
    (pdir / "v2.7.1" / "0001-old.patch").write_text(make_patch("test/old_name.py"))
    (pdir / "v2.7.1" / "0002-more.patch").write_text(make_patch("test/more.py"))
    (pdir / "release" / "v1").mkdir(parents=True)
    (pdir / "release" / "v1" / "0001-r.patch").write_text(make_patch("test/r.py"))
    ps = load_patch_set(pdir, load_branch_map(config, environ={}))
    assert ps.branches == ("v2.7.1", "v2.11.0", "v2.12.0", "release/v1")
    assert {t: tuple(p.path for p in series) for t, series in ps.variants.items()} == {
        "v2.7.1": (pdir / "v2.7.1" / "0001-old.patch", pdir / "v2.7.1" / "0002-more.patch"),
        "release/v1": (pdir / "release" / "v1" / "0001-r.patch",),
    }
    assert ps.series_for("v2.11.0") == ps.patches
    assert ps.touched_paths["v2.7.1"] == ("test/more.py", "test/old_name.py")
    assert ps.touched_paths["release/v1"] == ("test/r.py",)
    assert ps.touched_paths["v2.12.0"] == (TEST_FILE,)


def test_patch_files_sorted_by_name(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    pdir = tmp_path / "patches" / "put_metric"
    (pdir / "0002-b.patch").write_text(make_patch("b.py"))
    (pdir / "0010-c.patch").write_text(make_patch("c.py"))
    (pdir / "README.txt").write_text("not a patch")
    ps = load_patch_set(pdir, load_branch_map(config, environ={}))
    assert [p.name for p in ps.patches] == [
        "0001-test-add-put_metric-coverage.patch",
        "0002-b.patch",
        "0010-c.patch",
    ]


def test_load_project(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    write_project(tmp_path, name="other_api")
    (tmp_path / "patches" / "notes").mkdir()  # no patch.yaml, no patches: ignored
    project = load_project(config, environ={})
    assert project.root == tmp_path
    assert project.state_dir == tmp_path / ".backport"
    assert list(project.patch_sets) == ["other_api", "put_metric"]
    assert project.branch_map.forge == "local"
    other = project.patch_sets["other_api"]
    assert other.fork_branch(project.branch_map, "v2.7.1") == "test-other-api-v2.7.1"


def test_fork_branch_template_fields(tmp_path: Path) -> None:
    project = load_project(write_project(tmp_path), environ={})
    ps = project.patch_sets["put_metric"]
    bm = dataclasses.replace(project.branch_map, fork_branch="bp/{name}/{api}/{slug}/{target}")
    assert ps.fork_branch(bm, "master") == f"bp/put_metric/{ps.api}/put-metric/master"


def test_load_project_without_patches_dir(tmp_path: Path) -> None:
    config = tmp_path / "branches.yaml"
    config.write_text(BRANCHES_YAML)
    assert load_project(config, environ={}).patch_sets == {}


def test_load_project_explicit_patches_dir(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "patches").rename(elsewhere)
    project = load_project(config, patches_dir=elsewhere, environ={})
    assert list(project.patch_sets) == ["put_metric"]
    with pytest.raises(ConfigError, match="patches directory .*nope not found"):
        load_project(config, patches_dir=tmp_path / "nope", environ={})


def test_relative_config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    project = load_project(Path("branches.yaml"), environ={})
    assert project.root == tmp_path
    assert os.path.isabs(project.branch_map.upstream_url)


def test_bare_python_command_is_found_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "mypython"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    config = tmp_path / "branches.yaml"
    config.write_text(
        "forge: gitcode\nupstream: a/b\nfork: c/b\n"
        "environments: {e: {python: mypython}, f: {python: nothere}}\n"
        "branches: {master: {env: e}}\n"
    )
    bm = load_branch_map(config, environ={})
    assert bm.environments["e"].python == exe
    assert bm.environments["f"].python == tmp_path / "nothere"


LAUNCH_YAML = """\
forge: local
upstream: a/b
fork: c/b
upstream_url: /srv/up.git
fork_url: /srv/fork.git
environments:
  plain: {}
  npu:
    expect: {torch: "2.7.1"}
    requirements: ["torch==2.7.1", numpy]
    no_deps: ["torch_npu==2.7.1.post4"]
    extra_index_urls: ["https://download.pytorch.org/whl/cpu"]
    source: ~/Ascend/set_env.sh
    wrapper: [~/bin/run_api_python_version.sh, "2.7.1"]
  prefixed:
    python: /opt/py/bin/python
    source: scripts/env.sh
    wrapper: [taskset, -c, "0", "{python}"]
branches:
  master: {env: plain}
  v2.7.1: {env: npu}
  v2.12.0: {env: prefixed}
"""


def test_environment_without_interpreter_lives_in_the_per_user_folder(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    config = tmp_path / "branches.yaml"
    config.write_text(LAUNCH_YAML, encoding="utf-8")
    chosen = load_branch_map(config, environ={"BACKPORT_ENVS": "~/my-envs"})
    assert chosen.environments["plain"].interpreter == home / "my-envs" / "plain" / "bin" / "python"
    default = load_branch_map(config, environ={})
    # platformdirs' user data folder: ~/.local/share/backport on Linux
    assert default.environments["npu"].venv == home / ".local" / "share" / "backport" / "envs" / "npu"


def test_installer_and_launch_keys(tmp_path: Path, home: Path) -> None:
    config = tmp_path / "branches.yaml"
    config.write_text(LAUNCH_YAML, encoding="utf-8")
    envs = load_branch_map(config, environ={}).environments
    npu = envs["npu"]
    assert npu.requirements == ("torch==2.7.1", "numpy")
    assert npu.no_deps == ("torch_npu==2.7.1.post4",)
    assert npu.extra_index_urls == ("https://download.pytorch.org/whl/cpu",)
    assert npu.source == home / "Ascend" / "set_env.sh"
    assert npu.source_shown == "~/Ascend/set_env.sh"
    assert npu.wrapper == (str(home / "bin" / "run_api_python_version.sh"), "2.7.1")
    assert npu.wrapper_shown == ("~/bin/run_api_python_version.sh", "2.7.1")
    prefixed = envs["prefixed"]
    assert prefixed.source == tmp_path / "scripts" / "env.sh"  # relative to the file
    assert prefixed.source_shown == "scripts/env.sh"
    assert prefixed.wrapper == ("taskset", "-c", "0", "{python}")


def test_a_branch_may_ask_for_a_title_tag(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("  v2.7.1:  {env: torch-2.7.1}",
                                   "  v2.7.1: {env: torch-2.7.1, title_tag: '【2.7.1】'}"),
                      encoding="utf-8")
    bm = load_branch_map(config, environ={})
    assert bm.targets["v2.7.1"].title_tag == "【2.7.1】"
    assert bm.targets["master"].title_tag is None
