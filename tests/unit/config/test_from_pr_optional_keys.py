"""patch.yaml's `api` and `issue`: optional only in a set made from a PR; `issue` one or several."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config import load_branch_map, load_patch_set
from backport.errors import ConfigError
from tests.helpers.config_samples import PATCH_YAML, write_project

SOURCE = ("source_pr: 4281\nsource_base: master\nsource_commit: " + "a" * 40 + "\n"
          "source_merged: true\nsource_found_by: squash message\n")
NO_API = PATCH_YAML.replace("api: torch.distributed.elastic.metrics.put_metric\n", "")
NEITHER = NO_API.replace("issue: 3216\n", "")


def load(root: Path, text: str):
    config = write_project(root, patch_yaml=text)
    return load_patch_set(root / "patches" / "put_metric", load_branch_map(config, environ={}))


def test_a_set_from_a_pr_may_name_no_api_and_no_issue(tmp_path: Path) -> None:
    ps = load(tmp_path, NEITHER.replace("branches: [v2.7.1, v2.11.0, v2.12.0, master]\n",
                                        "branches: [v2.7.1]\n") + SOURCE)
    assert ps.api is None and ps.issues == ()
    assert ps.fork_branch(load_branch_map(tmp_path / "branches.yaml", environ={}), "v2.7.1")


@pytest.mark.parametrize("text, key", [(NO_API, "api"), (NEITHER, "api"),
                                       (PATCH_YAML.replace("issue: 3216\n", ""), "issue")])
def test_a_set_made_by_hand_still_needs_both(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert f"missing required key '{key}' (only a set made from a PR, with source_pr, may " \
           f"leave it out)" in info.value.message
    assert "patch.yaml" in info.value.message


def test_issue_may_list_several_once_each(tmp_path: Path) -> None:
    assert load(tmp_path, PATCH_YAML.replace("issue: 3216", "issue: [3216, 3217]")).issues \
        == (3216, 3217)
    for bad, said in (("issue: []", "lists no issue"), ("issue: [7, 7]", "lists an issue twice"),
                      ("issue: [7, x]", "positive issue number")):
        with pytest.raises(ConfigError, match=said):
            load(tmp_path, PATCH_YAML.replace("issue: 3216", bad))



def _no_tests(text: str) -> str:
    head, rest = text.split("tests:\n", 1)
    kept = rest.split("\n")
    while kept and kept[0].startswith((" ", "-")):
        kept.pop(0)
    return head + "tests: []\n" + "\n".join(kept)


def test_only_a_set_made_from_a_pr_may_list_no_test(tmp_path: Path) -> None:
    assert load(tmp_path, _no_tests(PATCH_YAML) + SOURCE).tests == ()
    with pytest.raises(ConfigError) as info:
        load(tmp_path, _no_tests(PATCH_YAML))
    assert ("lists no test (only a set made from a PR, with source_pr, may list none)"
            in info.value.message)


def test_a_set_made_from_a_pr_is_pr_code_and_a_hand_made_one_is_not(tmp_path: Path) -> None:
    """The record the refusal on hosts without namespaces reads (issue 47 item 5): the
    source_* keys the from-PR authoring writes."""
    assert load(tmp_path, PATCH_YAML + SOURCE).pr_code
    assert not load(tmp_path, PATCH_YAML).pr_code
