"""`ci:` of an environment: where CI runs the branches that use it (runner tags, image)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config import load_branch_map
from backport.errors import ConfigError

MAP = """\
forge: local
upstream: a/b
fork: c/b
upstream_url: /srv/up.git
fork_url: /srv/fork.git
environments:
  e1: {python: /py, ci: CI}
  e2: {python: /py}
branches:
  master: {env: e1}
  v1: {env: e2}
"""


def _load(tmp_path: Path, ci: str):
    config = tmp_path / "branches.yaml"
    config.write_text(MAP.replace("CI", ci), encoding="utf-8")
    return load_branch_map(config, environ={})


def test_runner_tags_and_image_are_read(tmp_path):
    bm = _load(tmp_path, "{runs_on: [self-hosted, npu, torch-2.7.1], image: 'reg.example/pt:2.7.1'}")
    placement = bm.environments["e1"].ci
    assert placement.runs_on == ("self-hosted", "npu", "torch-2.7.1")
    assert placement.image == "reg.example/pt:2.7.1"
    assert bm.environments["e2"].ci.runs_on == ("self-hosted", "e2")  # the default: its name
    assert bm.environments["e2"].ci.image == ""


@pytest.mark.parametrize(("ci", "said"), [
    ("{runs_on: []}", "ci.runs_on: must name at least one runner tag"),
    ("{runs_on: [self-hosted, 'a,b']}", "ci.runs_on[1]: 'a,b' is not a runner tag"),
    ("{image: 'a b'}", "ci.image: 'a b' is not a container image name"),
    ("{runs-on: [x]}", "unknown key 'runs-on' (did you mean 'runs_on'?)"),
    ("[x]", "ci: must be a mapping"),
])
def test_a_bad_ci_key_is_one_sentence_naming_file_line_and_key(tmp_path, ci, said):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, ci)
    message = str(info.value)
    assert message.startswith("branches.yaml:7:") or message.startswith(
        f"{tmp_path / 'branches.yaml'}:7:"), message
    assert said in message, message
