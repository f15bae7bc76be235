"""A test path that could be an option, and a URL carrying user info, are refused (exit 2) in
one sentence; the user info is never in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config import load_branch_map, load_patch_set
from backport.errors import EXIT_CODES, ConfigError
from tests.helpers.config_samples import BRANCHES_YAML, PATCH_YAML, write_project

SECRET = "s3cr3tTOKENvalue"
TEST_PATH = "test/distributed/elastic/metrics/test_metrics_api.py"


def _patch_error(root: Path, path: str) -> str:
    patch_yaml = PATCH_YAML.replace(f"path: {TEST_PATH}", f"path: {path!r}")
    config = write_project(root, patch_yaml=patch_yaml)
    with pytest.raises(ConfigError) as info:
        load_patch_set(root / "patches" / "put_metric", load_branch_map(config, environ={}))
    assert EXIT_CODES[info.value.code] == 2
    return str(info.value)


@pytest.mark.parametrize("path", ["-cimport os;os.system('id')", "./-m http.server",
                                  "-", ".//-x.py"])
def test_a_test_path_starting_with_a_dash_is_refused(tmp_path: Path, path: str) -> None:
    message = _patch_error(tmp_path, path)
    assert "patch.yaml:" in message and "tests[0].path" in message
    assert "starts with '-' (python would read it as an option)" in message


def test_a_dash_inside_a_path_is_fine(tmp_path: Path) -> None:
    patch_yaml = PATCH_YAML.replace(f"path: {TEST_PATH}", "path: test/-odd/test_x.py")
    config = write_project(tmp_path, patch_yaml=patch_yaml)
    ps = load_patch_set(tmp_path / "patches" / "put_metric", load_branch_map(config, environ={}))
    assert ps.tests[0].path == "test/-odd/test_x.py"


def _map_error(root: Path, text: str, environ: dict[str, str]) -> str:
    config = write_project(root, branches=text)
    with pytest.raises(ConfigError) as info:
        load_branch_map(config, environ=environ)
    assert EXIT_CODES[info.value.code] == 2
    message = str(info.value)
    assert "\n" not in message
    return message


GITCODE = BRANCHES_YAML.replace("forge: local", "forge: gitcode").replace(
    "upstream_url: ./sandbox/upstream.git\n", "").replace("fork_url: ./sandbox/fork.git\n", "")


@pytest.mark.parametrize(("key", "url"), [
    ("fork_url", f"https://{SECRET}@gitcode.com/lgxxx/pytorch.git"),
    ("fork_url", f"https://oauth2:{SECRET}@gitcode.com/lgxxx/pytorch.git"),
    ("upstream_url", f"http://{SECRET}@gitcode.com/Ascend/pytorch.git"),
    ("api_url", f"https://{SECRET}@api.gitcode.com/api/v5"),
    ("web_url", f"https://x:{SECRET}@gitcode.com"),
])
def test_user_info_in_a_url_of_the_map_is_refused_unsaid(tmp_path: Path, key: str,
                                                          url: str) -> None:
    message = _map_error(tmp_path, GITCODE + f"{key}: {url}\n", {})
    assert f"branches.yaml:24: {key}:" in message
    assert SECRET not in message and "***" not in message
    assert "gitcode.com" in message  # the URL is named, without its user info


@pytest.mark.parametrize("variable", ["BACKPORT_FORK_URL", "BACKPORT_UPSTREAM_URL",
                                      "BACKPORT_API_URL"])
def test_user_info_in_a_url_variable_is_refused_unsaid(tmp_path: Path, variable: str) -> None:
    url = f"https://{SECRET}@gitcode.com/lgxxx/other.git"
    message = _map_error(tmp_path, GITCODE, {variable: url})
    assert message.startswith(f"{variable}: 'https://gitcode.com/lgxxx/other.git' must not carry")
    assert SECRET not in message


def test_an_ssh_user_name_is_no_secret(tmp_path: Path) -> None:
    config = write_project(tmp_path, branches=GITCODE + "fork_url: ssh://git@gitcode.com/lgxxx/pytorch.git\n")
    assert load_branch_map(config, environ={}).fork_url == "ssh://git@gitcode.com/lgxxx/pytorch.git"
