"""`audit: {ignore: [regex…]}` in branches.yaml: read as patterns, refused in one sentence naming
the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config import load_branch_map
from backport.errors import EXIT_CODES, ConfigError
from tests.helpers.config_samples import BRANCHES_YAML, write_project


def _load(root: Path, audit: str):
    config = write_project(root, branches=BRANCHES_YAML + audit)
    return load_branch_map(config, environ={})


def test_the_patterns_are_read(tmp_path: Path) -> None:
    bm = _load(tmp_path, 'audit:\n  ignore: ["^Update op_plugin commit id", "^\\\\[ci\\\\]"]\n')
    assert bm.audit_ignore == ("^Update op_plugin commit id", "^\\[ci\\]")


def test_no_audit_key_ignores_nothing(tmp_path: Path) -> None:
    assert _load(tmp_path, "").audit_ignore == ()


@pytest.mark.parametrize(("audit", "said"), [
    ('audit:\n  ignore: ["fix(", "ok"]\n', "audit.ignore[0]: 'fix(' is not a regular expression"),
    ("audit:\n  ignroe: [x]\n", "audit"),
    ("audit:\n  ignore: x\n", "audit.ignore"),
])
def test_a_bad_audit_key_is_one_sentence_naming_file_line_key(tmp_path: Path, audit: str,
                                                               said: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, audit)
    message = str(info.value)
    assert EXIT_CODES[info.value.code] == 2
    line = BRANCHES_YAML.count("\n") + 2
    assert f"branches.yaml:{line}:" in message and said in message, message
    assert "\n" not in message
