"""What verbose (``-v``) test output says of single tests: unittest's ``name (id) ... ok`` lines
and its ``FAIL:``/``ERROR:`` reports, and pytest's ``path::Class::name PASSED`` lines."""

from __future__ import annotations

import re
from collections.abc import Sequence

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# "test_x (module.Class.test_x) ... ok" (3.11+) or "test_x (module.Class) ... ok"; a test with a
# docstring puts its first line, then " ... ok", on the next line; xmlrunner indents the line.
_UNITTEST = re.compile(r"^\s*(?P<method>[A-Za-z_]\w*) \((?P<id>[\w.]+)\)(?P<rest>.*)$")
_REPORT = re.compile(r"^\s*(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<method>[A-Za-z_]\w*) "
                     r"\((?P<id>[\w.]+)\)")
_PYTEST = re.compile(r"^(?P<node>\S+::\S+) (?P<word>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_SEP = " ... "
_DURATION = re.compile(r"\s*\(\d+(?:\.\d+)?m?s\)$")  # xmlrunner's "ok (0.002s)"
_OUTCOMES = ("ok", "FAIL", "ERROR", "skipped", "expected failure", "unexpected success")
_PYTEST_WORDS = {"PASSED": "ok", "FAILED": "FAIL", "ERROR": "ERROR", "SKIPPED": "skipped",
                 "XFAIL": "expected failure", "XPASS": "unexpected success"}
NOT_RUN = "not run"


def _outcome_word(text: str) -> str | None:
    text = _DURATION.sub("", text.strip())
    for word in _OUTCOMES:
        if text == word or (word == "skipped" and text.startswith("skipped ")):
            return word
    return None


def _unittest_class(method: str, test_id: str) -> str:
    parts = test_id.split(".")
    return parts[-2] if parts[-1] == method and len(parts) > 1 else parts[-1]


def _results(lines: list[str]) -> list[tuple[str, str, str]]:
    """(class, method, outcome) of every test the output reports, in order."""
    found: list[tuple[str, str, str]] = []
    for index, line in enumerate(lines):
        pytest = _PYTEST.match(line)
        if pytest:
            parts = pytest.group("node").split("::")
            cls = parts[-2] if len(parts) > 2 else ""
            found.append((cls, parts[-1].split("[")[0], _PYTEST_WORDS[pytest.group("word")]))
            continue
        report = _REPORT.match(line)
        if report:
            kind = "unexpected success" if report.group("kind") == "UNEXPECTED SUCCESS" else (
                report.group("kind"))
            found.append((_unittest_class(report.group("method"), report.group("id")),
                          report.group("method"), kind))
            continue
        head = _UNITTEST.match(line)
        if not head:
            continue
        method, rest = head.group("method"), head.group("rest")
        word = None
        following = lines[index + 1:index + 50]
        if not rest and following and _SEP in following[0]:  # the docstring line
            rest, following = following[0][following[0].index(_SEP):], following[1:]
        if rest.startswith(_SEP):
            word = _outcome_word(rest[len(_SEP):])
            for later in following if word is None else ():  # the test printed after " ... "
                if _UNITTEST.match(later):
                    break
                word = _outcome_word(later)
                if word:
                    break
        if word:
            found.append((_unittest_class(method, head.group("id")), method, word))
    return found


def outcomes_of(text: str, tests: Sequence[tuple[str, str]]) -> list[str]:
    """The outcome of each (class, name) in ``text``: ``ok``, ``FAIL``, ``ERROR``,
    ``skipped``, ``expected failure``, ``unexpected success``, or ``not run`` when no line
    names it. The class may be "" (a module-level test) and may be dotted (nested classes).

    A test torch instantiated per device (``TestX`` → ``TestXCPU``, ``test_y`` →
    ``test_y_cpu``) counts when the test itself is not named. Any line that is not ``ok``
    decides the outcome of a test reported more than once.
    """
    lines = [line.rstrip() for line in _ANSI.sub("", text or "").replace("\r", "\n").split("\n")]
    results = _results(lines)
    outcomes = []
    for scope, name in tests:
        cls = scope.split(".")[-1] if scope else ""
        words = [w for c, m, w in results if m == name and (not cls or c == cls)]
        if not words and cls:
            words = [w for c, m, w in results if c.startswith(cls) and c != cls
                     and m.startswith(name + "_")]
        if not words:
            outcomes.append(NOT_RUN)
        else:
            outcomes.append(next((w for w in words if w != "ok"), "ok"))
    return outcomes
