"""Each kind of bad patch set gives one ConfigError naming the file and line or key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backport.config import load_branch_map, load_patch_set, load_project
from backport.errors import ConfigError
from tests.helpers.config_samples import BRANCHES_YAML, PATCH_YAML, make_patch, write_project


def _replace(old: str, new: str) -> str:
    assert old in PATCH_YAML
    return PATCH_YAML.replace(old, new)


def _load(
    root: Path,
    patch_yaml: str = PATCH_YAML,
    patch: str | None = None,
    branches: str = BRANCHES_YAML,
):
    config = write_project(root, branches=branches, patch_yaml=patch_yaml, patch=patch)
    return load_patch_set(root / "patches" / "put_metric", load_branch_map(config, environ={}))


def _error(root: Path, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        _load(root, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


CASES = [
    ("empty", "", None, ["patch.yaml: is empty"]),
    ("list", "- api\n", 1, ["must be a mapping"]),
    ("misspelt", PATCH_YAML + "isue: 3\n", 9, ["unknown key 'isue' (did you mean 'issue'?)"]),
    (
        "missing-title",
        _replace('title: "test: add put_metric coverage"\n', ""),
        1,
        ["missing required key 'title'"],
    ),
    (
        "api-form",
        _replace("api: torch.distributed", "api: torch..distributed"),
        1,
        ["api:", "not a dotted API name"],
    ),
    (
        "issue-negative",
        _replace("issue: 3216", "issue: -4"),
        2,
        ["issue:", "positive issue number", "the number -4"],
    ),
    ("issue-text", _replace("issue: 3216", "issue: abc"), 2, ["positive issue number", "'abc'"]),
    ("issue-bool", _replace("issue: 3216", "issue: yes"), 2, ["the boolean true"]),
    ("issue-huge", _replace("issue: 3216", "issue: 99999999999999"), 2, ["positive issue number"]),
    (
        "title-empty",
        _replace('title: "test: add put_metric coverage"', 'title: "  "'),
        3,
        ["title:", "must not be empty"],
    ),
    (
        "title-multiline",
        _replace('title: "test: add put_metric coverage"', 'title: "a\\nb"'),
        3,
        ["single line"],
    ),
    (
        "title-long",
        _replace('title: "test: add put_metric coverage"', "title: " + "x" * 300),
        3,
        ["more than the 255 allowed"],
    ),
    (
        "tests-empty",
        _replace(
            'tests:\n  - path: test/distributed/elastic/metrics/test_metrics_api.py\n    args: ["-v"]\n',
            "tests: []\n",
        ),
        4,
        ["tests:", "lists no test"],
    ),
    (
        "tests-mapping",
        _replace("  - path: test/distributed", "  path: test/distributed").replace(
            "    args", "  args"
        ),
        5,
        ["tests:", "must be a list of tests"],
    ),
    (
        "test-absolute",
        _replace("path: test/distributed", "path: /test/distributed"),
        5,
        ["tests[0].path:", "is absolute"],
    ),
    (
        "test-dotdot",
        _replace("path: test/distributed", "path: test/../../distributed"),
        5,
        ["leaves the repository"],
    ),
    (
        "test-dotgit",
        _replace("path: test/distributed", "path: .git/hooks/distributed"),
        5,
        ["inside a .git directory"],
    ),
    (
        "test-backslash",
        _replace("path: test/distributed", "path: test\\\\distributed"),
        5,
        ["uses '\\'"],
    ),
    (
        "test-key",
        _replace('    args: ["-v"]', '    argv: ["-v"]'),
        6,
        ["tests[0]:", "unknown key 'argv' (did you mean 'args'?)"],
    ),
    (
        "test-args-float",
        _replace('args: ["-v"]', "args: [1.5]"),
        6,
        ["tests[0].args[0]:", 'quote it: "1.5"'],
    ),
    (
        "device",
        _replace("device: none", "device: npu1"),
        7,
        ["device:", "'none' or 'npu'", "did you mean 'npu'?"],
    ),
    (
        "device-null",
        _replace("device: none", "device:"),
        7,
        ["device:", "must be a string, not empty"],
    ),
    (
        "branch-unknown",
        _replace("[v2.7.1,", "[v2.7.2,"),
        8,
        ["branches[0]:", "unknown target branch 'v2.7.2'", "did you mean 'v2.7.1'?"],
    ),
    (
        "branch-twice",
        _replace("master]", "master, master]"),
        8,
        ["branches[4]:", "lists 'master' twice"],
    ),
    (
        "branch-empty",
        _replace("branches: [v2.7.1, v2.11.0, v2.12.0, master]", "branches: []"),
        8,
        ["lists no target branch"],
    ),
    (
        "branch-number",
        _replace("branches: [v2.7.1, v2.11.0, v2.12.0, master]", "branches: [2.10]"),
        8,
        ["branches[0]:", 'quote it: "2.10"'],
    ),
    (
        "pr-unknown",
        PATCH_YAML + "pr: {labls: [x]}\n",
        9,
        ["pr:", "unknown key 'labls' (did you mean 'labels'?)"],
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "parts"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_patch_yaml(tmp_path: Path, text: str, line: int | None, parts: list[str]) -> None:
    message = _error(tmp_path, patch_yaml=text)
    where = f"patches/put_metric/patch.yaml:{line}:" if line else "patches/put_metric/patch.yaml:"
    assert where in message, message
    for part in parts:
        assert part in message, message


def test_issue_as_string(tmp_path: Path) -> None:
    assert _load(tmp_path, patch_yaml=_replace("issue: 3216", 'issue: "3216"')).issues == (3216,)


def test_missing_patch_yaml(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    (tmp_path / "patches" / "put_metric" / "patch.yaml").unlink()
    with pytest.raises(ConfigError, match=r"patches/put_metric/patch\.yaml not found"):
        load_patch_set(tmp_path / "patches" / "put_metric", load_branch_map(config, environ={}))


def test_patch_files_without_patch_yaml_in_project(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    (tmp_path / "patches" / "put_metric" / "patch.yaml").unlink()
    project = load_project(config, environ={})
    assert project.patch_sets == {}
    assert re.search(r"patches/put_metric has patch files but no patch\.yaml",
                     project.broken["put_metric"])


def test_no_patch_files(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    (tmp_path / "patches" / "put_metric" / "0001-test-add-put_metric-coverage.patch").unlink()
    with pytest.raises(
        ConfigError, match=r"patches/put_metric has no NNNN-\*\.patch file for target 'v2\.7\.1'"
    ):
        load_patch_set(tmp_path / "patches" / "put_metric", load_branch_map(config, environ={}))


def test_badly_named_patch_file(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    (tmp_path / "patches" / "put_metric" / "fix.patch").write_text(make_patch())
    with pytest.raises(
        ConfigError, match=r"fix\.patch: patch file names must look like NNNN-name\.patch"
    ):
        load_patch_set(tmp_path / "patches" / "put_metric", load_branch_map(config, environ={}))


def test_variant_dir_for_unknown_target(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    variant = tmp_path / "patches" / "put_metric" / "v2.7.2"
    variant.mkdir()
    (variant / "0001-x.patch").write_text(make_patch())
    with pytest.raises(
        ConfigError,
        match=r"v2\.7\.2 holds patch files but 'v2\.7\.2' is not a target branch \(did you mean 'v2\.7\.1'\?\)",
    ):
        load_patch_set(tmp_path / "patches" / "put_metric", load_branch_map(config, environ={}))


def test_empty_variant_dir(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    (tmp_path / "patches" / "put_metric" / "master").mkdir()
    with pytest.raises(
        ConfigError, match=r"is named after target 'master' but has no NNNN-\*\.patch file"
    ):
        load_patch_set(tmp_path / "patches" / "put_metric", load_branch_map(config, environ={}))


def test_body_not_utf8(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    (tmp_path / "patches" / "put_metric" / "body.md").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match=r"body\.md is not valid UTF-8"):
        load_patch_set(tmp_path / "patches" / "put_metric", load_branch_map(config, environ={}))


def test_patch_file_problem_names_file_and_line(tmp_path: Path) -> None:
    message = _error(tmp_path, patch=make_patch("../outside.py"))
    assert "patches/put_metric/0001-test-add-put_metric-coverage.patch:10:" in message
    assert "touches '../outside.py', which leaves the repository through '..'" in message


def test_rendered_fork_branch_invalid_for_api(tmp_path: Path) -> None:
    branches = BRANCHES_YAML.replace(
        'fork_branch: "test-{slug}-{target}"', 'fork_branch: "{target}/{api}"'
    )
    message = _error(
        tmp_path,
        branches=branches,
        patch_yaml=_replace("api: torch.distributed.elastic.metrics.put_metric", "api: torch.lock"),
    )
    assert (
        "branches.yaml: fork_branch renders 'v2.7.1/torch.lock' for patch set 'put_metric'"
        in message
    )
    assert ".lock" in message


def test_fork_branch_collision_between_patch_sets(tmp_path: Path) -> None:
    branches = BRANCHES_YAML.replace(
        'fork_branch: "test-{slug}-{target}"', 'fork_branch: "test-{target}"'
    )
    config = write_project(tmp_path, branches=branches)
    write_project(tmp_path, branches=branches, name="other")
    with pytest.raises(
        ConfigError, match=r"renders 'test-v2\.7\.1' for both patch sets 'other' and 'put_metric'"
    ):
        load_project(config, environ={})


def test_slug_collision_between_patch_sets(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    write_project(tmp_path, name="put-metric")
    with pytest.raises(ConfigError, match="'test-put-metric-v2.7.1' for both patch sets"):
        load_project(config, environ={})


def test_bad_patch_set_directory_name(tmp_path: Path) -> None:
    config = write_project(tmp_path, name="bad name")
    write_project(tmp_path, name="good")
    project = load_project(config, environ={})
    assert list(project.patch_sets) == ["good"]
    assert "patch set name 'bad name'" in project.broken["bad name"]
