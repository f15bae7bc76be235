"""Error codes and the one table of exit codes, as docs/architecture.md documents them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import backport
from backport.errors import (
    EXIT_CODES,
    BackportError,
    ConfigError,
    ErrorCode,
    ForkDiverged,
)
from tests.unit.conftest import nodes

PACKAGE = Path(backport.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def documented_codes() -> dict[str, int]:
    """code -> exit code from the table of the ``## Errors`` section."""
    section = ARCHITECTURE.read_text(encoding="utf-8").split("## Errors", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z-]+)` \| (\d+) \|", section, re.M)
    return {code: int(exit_code) for code, exit_code in rows}


def test_the_documented_table_is_the_code_table() -> None:
    assert documented_codes() == {code.value: exit_code for code, exit_code in EXIT_CODES.items()}


def test_journal_and_internal_are_codes() -> None:
    assert BackportError("journal", "cannot write").exit_code == 1
    assert BackportError(ErrorCode.INTERNAL, "a bug").exit_code == 1


@pytest.mark.parametrize("code", ["config", "usage", "locked"])
def test_configuration_and_usage_exit_2(code: str) -> None:
    assert BackportError(code, "bad").exit_code == 2


def test_codes_keep_their_strings() -> None:
    error = BackportError("fork-unreachable", "cannot push")
    assert error.code == "fork-unreachable" and error.code is ErrorCode.FORK_UNREACHABLE
    assert f"{error.code}" == "fork-unreachable"
    assert ConfigError("x").code == "config"


def test_an_unknown_code_is_a_bug() -> None:
    with pytest.raises(ValueError):
        BackportError("no-such-code", "text")


def test_fork_diverged_carries_both_commits() -> None:
    error = ForkDiverged("moved", remote="a" * 40, expected=None)
    assert isinstance(error, BackportError) and error.code == "fork-diverged"
    assert (error.remote, error.expected) == ("a" * 40, None)


def _strings(node: ast.AST | None) -> list[str]:
    """The string constants ``node`` may evaluate to (a constant or a conditional of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    return []


def literal_codes() -> list[tuple[str, str]]:
    """(file, code) for each string the package uses as an error code.

    Looked for: the first argument of ``BackportError(...)`` / ``ApiError(...)``, ``code=`` and
    ``error_code=`` arguments, values assigned to a variable ``code``, and ``x.code == "..."``.
    """
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in nodes(path, ast.Call, ast.Assign, ast.Compare):
            values: list[str] = []
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if name in ("BackportError", "ApiError") and node.args:
                    values += _strings(node.args[0])
                for keyword in node.keywords:
                    if keyword.arg in ("code", "error_code"):
                        values += _strings(keyword.value)
            elif isinstance(node, ast.Assign):
                if any(getattr(t, "id", None) == "code" for t in node.targets):
                    values += _strings(node.value)
            elif isinstance(node, ast.Compare) and getattr(node.left, "attr", None) == "code":
                for comparator in node.comparators:
                    values += _strings(comparator)
            found += [(str(path.relative_to(PACKAGE)), value) for value in values]
    return found


def test_every_code_the_package_raises_is_in_the_table() -> None:
    codes = literal_codes()
    assert codes, "the scan found no codes at all"
    assert [(path, code) for path, code in codes if code not in set(ErrorCode)] == []
