"""`pipeline/from_pr.py` `write_patch_set`: a patch set folder is written whole or not at all."""

from __future__ import annotations

import os

import pytest

from backport.config import load_project
from backport.errors import ConfigError
from backport.pipeline.from_pr import write_patch_set
from tests.helpers.upstream import PLAIN, commit_test


def test_a_set_that_does_not_validate_leaves_the_previous_one_whole(sandbox, tmp_path):
    project = load_project(sandbox.config, None, os.environ)
    repo = commit_test(tmp_path, "test/test_plain.py", PLAIN)
    dest = sandbox.project / "patches" / "made"
    dest.mkdir(parents=True)
    (dest / "patch.yaml").write_text("kept: yes\n", encoding="utf-8")
    spec = {"api": "a.b", "issue": "not a number", "title": "test: plain"}
    with pytest.raises(ConfigError) as caught:
        write_patch_set(project, dest, repo, "HEAD", ["test/test_plain.py"], spec, say=print)
    assert "issue" in caught.value.message and str(dest) in caught.value.message
    assert ".new-" not in caught.value.message  # the staging folder is never named
    assert sorted(p.name for p in dest.iterdir()) == ["patch.yaml"]
    assert (dest / "patch.yaml").read_text(encoding="utf-8") == "kept: yes\n"
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".new-")]


def test_a_valid_set_replaces_the_folder_and_says_what_it_wrote(sandbox, tmp_path):
    project = load_project(sandbox.config, None, os.environ)
    repo = commit_test(tmp_path, "test/test_plain.py", PLAIN)
    dest = sandbox.project / "patches" / "made"
    said: list[str] = []
    write_patch_set(project, dest, repo, "HEAD", ["test/test_plain.py"],
                    {"api": "a.b", "issue": 7, "title": "test: plain"}, say=said.append)
    assert [p.name for p in sorted(dest.glob("*.patch"))] == ["0001-test-add-a-test.patch"]
    assert said[0].startswith(f"wrote {dest}: 0001-test-add-a-test.patch and patch.yaml")
    assert said[1].startswith("device: none")
