"""`backport list`: each patch set with its target branches, environments and fork branches."""

from __future__ import annotations

from tests.helpers.project import run_app

TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]


def test_list_names_each_patch_set_with_its_branches(sandbox) -> None:
    result = run_app(sandbox.project, "list", "--json")
    assert result.code == 0, result.err
    (entry,) = result.json()
    assert entry["name"] == "put_metric" and entry["patches"] == 1
    assert [b["target"] for b in entry["branches"]] == TARGETS
    assert entry["branches"][0]["fork_branch"] == "test-put-metric-v2.7.1"
