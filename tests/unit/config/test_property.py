"""Property tests: any input either loads or raises ConfigError, never another exception."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backport.config import load_branch_map, load_patch_set
from backport.config.branch_map import ENV_KEYS, PR_KEYS, TOP_KEYS
from backport.config.model import BranchMap, PatchSet
from backport.config.patch_set import PATCH_KEYS
from backport.config.patchfiles import parse_patch
from backport.errors import ConfigError
from tests.helpers.config_samples import BRANCHES_YAML, PATCH_YAML, make_patch, write_project

SETTINGS = settings(
    max_examples=int(os.environ.get("BACKPORT_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# The two sample documents, parsed once (``_mutate`` copies before it changes one); what a test
# writes is dumped by libyaml's emitter where PyYAML has it: the pure-Python one took a third
# of these tests' time, and the tool's own loader still reads every file.
BRANCHES_DOC = yaml.safe_load(BRANCHES_YAML)
PATCH_DOC = yaml.safe_load(PATCH_YAML)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(doc: object) -> str:
    return yaml.dump(doc, Dumper=DUMPER)


KEYS = [
    *TOP_KEYS,
    *ENV_KEYS,
    *PR_KEYS,
    *PATCH_KEYS,
    "path",
    "args",
    "torch",
    "master",
    "v2.7.1",
    "torch-2.7.1",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(
        ["2.7.1", "2.10", "~/x", "../x", "/abs", ".git/x", "{target}", "-x", "a..b", "local"]
    )
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)
YAMLISH = st.lists(
    st.sampled_from(
        list("abc:-[]{}&*!|>'\"#%@`,?\n \t.~\\") + ["forge", "<<", "*a", "&a", "!!", "\n  "]
    ),
    max_size=60,
).map("".join)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prop")
    write_project(root)
    return root


@pytest.fixture(scope="module")
def branch_map(project: Path) -> BranchMap:
    """The project's map, read once: the patch tests fuzz only ``patch.yaml``, and reading the
    unchanged ``branches.yaml`` again for each example was half of their time."""
    return load_branch_map(project / "branches.yaml", environ={})


def _loads_or_config_error(config: Path) -> None:
    try:
        result = load_branch_map(config, environ={})
    except ConfigError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(result, BranchMap)


def _patch_loads_or_config_error(root: Path, bm: BranchMap) -> None:
    try:
        result = load_patch_set(root / "patches" / "put_metric", bm)
    except ConfigError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(result, PatchSet)


def _mutate(doc: object, path: list[int], value: object) -> object:
    """Replace the value reached by following ``path`` (indices into keys/items) with ``value``."""
    doc = copy.deepcopy(doc)
    node = doc
    for step in path:
        if isinstance(node, dict) and node:
            key = list(node)[step % len(node)]
            if not isinstance(node[key], dict | list) or not node[key]:
                node[key] = value
                return doc
            node = node[key]
        elif isinstance(node, list) and node:
            node[step % len(node)] = value
            return doc
    if isinstance(node, dict):
        node[f"k{len(path)}"] = value
    return doc


@SETTINGS
@given(text=st.text(max_size=200) | YAMLISH)
def test_branches_any_text(project: Path, text: str) -> None:
    config = project / "fuzz-branches.yaml"
    config.write_text(text, encoding="utf-8")
    _loads_or_config_error(config)


@SETTINGS
@given(value=VALUES)
def test_branches_any_structure(project: Path, value: object) -> None:
    config = project / "fuzz-branches.yaml"
    config.write_text(_dump(value), encoding="utf-8")
    _loads_or_config_error(config)


@SETTINGS
@given(path=st.lists(st.integers(min_value=0, max_value=20), max_size=5), value=VALUES)
def test_branches_mutated(project: Path, path: list[int], value: object) -> None:
    config = project / "fuzz-branches.yaml"
    config.write_text(
        _dump(_mutate(BRANCHES_DOC, path, value)), encoding="utf-8"
    )
    _loads_or_config_error(config)


@SETTINGS
@given(text=st.text(max_size=200) | YAMLISH)
def test_patch_yaml_any_text(project: Path, branch_map: BranchMap, text: str) -> None:
    (project / "patches" / "put_metric" / "patch.yaml").write_text(text, encoding="utf-8")
    _patch_loads_or_config_error(project, branch_map)


@SETTINGS
@given(path=st.lists(st.integers(min_value=0, max_value=20), max_size=4), value=VALUES)
def test_patch_yaml_mutated(project: Path, branch_map: BranchMap, path: list[int],
                            value: object) -> None:
    doc = _mutate(PATCH_DOC, path, value)
    (project / "patches" / "put_metric" / "patch.yaml").write_text(
        _dump(doc), encoding="utf-8"
    )
    _patch_loads_or_config_error(project, branch_map)


PATCH_LINES = st.sampled_from(
    [
        "diff --git a/x.py b/x.py", 'diff --git "a/\\303" "b/\\303"', "diff --git a/a b c b/a b c",
        "--- a/x.py", "+++ b/x.py", "--- /dev/null", "+++ /dev/null", "@@ -1 +1 @@", "@@ -0,0 +1,2 @@",
        "@@ -1,2 +1 @@", "+x", "-y", " z", "", "\\ No newline at end of file", "new file mode 120000",
        "index 1..2 120000", "rename from a", "rename to ../b", "GIT binary patch", "literal 5", "-- ",
        "From " + "2" * 40 + " Mon Sep 17 00:00:00 2001", "From: x", "Subject: y", "+/etc/passwd",
        "old mode 100644", "new mode 100755", "copy to .git/x", '+++ "b/unterminated',
    ]
)  # fmt: skip


@SETTINGS
@given(lines=st.lists(PATCH_LINES | st.text(max_size=10), max_size=40), keep_head=st.booleans())
def test_patch_text_fuzz(lines: list[str], keep_head: bool) -> None:
    head = make_patch().split("diff --git")[0] if keep_head else ""
    try:
        text = head + "\n".join(lines) + "\n"
        patch = parse_patch(text.encode("utf-8", "surrogateescape"), Path("0001-f.patch"))
        subjects, paths = patch.subjects, patch.paths
    except ConfigError as exc:
        assert str(exc).startswith("0001-f.patch:")
    else:
        assert subjects
        for p in paths:
            assert not p.startswith("/") and ".." not in p.split("/")
