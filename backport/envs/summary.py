"""Read a test log: its last unittest or pytest summary, and each test's verbose outcome."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from backport.numerals import DIGITS, number

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RAN = re.compile(rf"^Ran ({DIGITS}) tests? in (\d+(?:\.\d+)?)s\s*$")
_UNITTEST_STATUS = re.compile(r"^(OK|FAILED|NO TESTS RAN)(?: \((.*)\))?\s*$")
_COUNT = re.compile(rf"^\s*([a-z ]+?)=({DIGITS})\s*$")
_PYTEST = re.compile(r"^=*\s*(.*?)\s+in (\d+(?:\.\d+)?)s(?: \(\d+:\d\d:\d\d\))?\s*=*$")
_PYTEST_PART = re.compile(rf"^({DIGITS}) ([a-z]+)$")
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)"
    r"(?:: .*)?$")
# python's own complaint when the test file is not there (no traceback, exit 2).
_CANT_OPEN = re.compile(r"^\S*python[\d.]*: (can't open file .*)$")
# An absolute path in an exception message names this machine's layout: keep the last part.
_ABS_PATH = re.compile(r"(?<![\w.~])/(?:[^\s/:'\"]+/)+(?=[^\s/:'\"]+)")
_PYTEST_COUNTED = {
    "passed", "failed", "error", "errors", "skipped", "xfailed", "xpassed",
    "deselected", "warning", "warnings", "rerun", "reruns",
}  # fmt: skip


@dataclass(frozen=True)
class Summary:
    """What the last test summary says (None: nothing); ``ok`` needs at least one test."""

    ran: int | None = None
    ok: bool | None = None
    lines: list[str] = field(default_factory=list)
    exception: str | None = None  # the last exception line of the log, paths cut to file names

    def outcome(self, exit_code: int | None) -> list[str]:
        """The summary lines, else the last exception, else ``no test summary; exit N``."""
        if self.lines:
            return list(self.lines)
        if self.exception:
            return [self.exception]
        return [f"no test summary; exit {exit_code}"] if exit_code is not None else []


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in _ANSI.sub("", text or "").replace("\r", "\n").split("\n")]


def _unittest_counts(detail: str | None) -> dict[str, int] | None:
    counts: dict[str, int] = {}
    for part in detail.split(",") if detail else ():
        match = _COUNT.match(part)
        count = number(match.group(2)) if match else None
        if match is None or count is None:
            return None
        counts[match.group(1)] = count
    return counts


def _ran(line: str) -> re.Match[str] | None:
    """unittest's ``Ran N tests in Ts`` line, N a count of at most ten digits."""
    match = _RAN.match(line)
    return match if match is not None and number(match.group(1)) is not None else None


def _unittest(lines: list[str], index: int) -> Summary:
    ran_match = _ran(lines[index])
    assert ran_match is not None
    ran = int(ran_match.group(1))
    for line in lines[index + 1 : index + 4]:
        status = _UNITTEST_STATUS.match(line)
        counts = _unittest_counts(status.group(2)) if status else None
        if status and counts is not None:
            return Summary(ran=ran, ok=status.group(1) == "OK" and ran > 0,
                           lines=[lines[index], line])
        if line:
            break
    return Summary(ran=ran, ok=None, lines=[lines[index]])


def _pytest(line: str) -> Summary | None:
    """A pytest final line such as ``=== 3 passed, 1 failed in 0.12s ===``, else None."""
    match = _PYTEST.match(line)
    if not match:
        return None
    body = match.group(1)
    if body == "no tests ran":
        return Summary(ran=0, ok=False, lines=[line.strip("= ")])
    counts: dict[str, int] = {}
    for part in body.split(", "):
        found = _PYTEST_PART.match(part)
        count = number(found.group(1)) if found else None
        if found is None or count is None or found.group(2) not in _PYTEST_COUNTED:
            return None
        word = found.group(2).rstrip("s")  # errors -> error, warnings -> warning
        counts[word] = counts.get(word, 0) + count
    ran = sum(counts.get(k, 0) for k in ("passed", "failed", "error", "skipped", "xfailed",
                                         "xpassed"))
    failed = counts.get("failed", 0) + counts.get("error", 0)
    return Summary(ran=ran, ok=failed == 0 and ran > 0, lines=[line.strip("= ")])


def parse_summary(text: str) -> Summary:
    """The last unittest or pytest summary in ``text``, with the log's last exception."""
    lines = _lines(text)
    found = Summary()
    for index in range(len(lines) - 1, -1, -1):
        summary = _pytest(lines[index]) if " in " in lines[index] else None
        if _ran(lines[index]) or summary is not None:
            found = summary or _unittest(lines, index)
            break
    return replace(found, exception=last_exception(lines))


def last_exception(lines: list[str]) -> str | None:
    """The exception line of the last traceback (else the last line that looks like one)."""
    start = max((i for i, line in enumerate(lines) if line.strip() == _TRACEBACK), default=None)
    if start is not None:
        for line in lines[start + 1:]:
            if line and not line[0].isspace() and _EXCEPTION.match(line):
                return _ABS_PATH.sub("", line.strip())
    for line in reversed(lines):
        if _EXCEPTION.match(line):
            return _ABS_PATH.sub("", line.strip())
        cant_open = _CANT_OPEN.match(line.strip())
        if cant_open:
            return _ABS_PATH.sub("", cant_open.group(1))
    return None


# "test_x (module.Class.test_x) ... ok" (3.11+) or "test_x (module.Class) ... ok"; a test with a
# docstring puts its first line, then " ... ok", on the next line; xmlrunner indents the line.
_UNITTEST_LINE = re.compile(r"^\s*(?P<method>[A-Za-z_]\w*) \((?P<id>[\w.]+)\)(?P<rest>.*)$")
_REPORT = re.compile(r"^\s*(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<method>[A-Za-z_]\w*) "
                     r"\((?P<id>[\w.]+)\)")
_PYTEST_LINE = re.compile(r"^(?P<node>\S+::\S+) (?P<word>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
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
        pytest = _PYTEST_LINE.match(line)
        if pytest:
            parts = pytest.group("node").split("::")
            cls = parts[-2] if len(parts) > 2 else ""
            found.append((cls, parts[-1].split("[")[0], _PYTEST_WORDS[pytest.group("word")]))
            continue
        report = _REPORT.match(line)
        if report:
            kind = report.group("kind").replace("UNEXPECTED SUCCESS", "unexpected success")
            found.append((_unittest_class(report.group("method"), report.group("id")),
                          report.group("method"), kind))
            continue
        head = _UNITTEST_LINE.match(line)
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
                if _UNITTEST_LINE.match(later):
                    break
                word = _outcome_word(later)
                if word:
                    break
        if word:
            found.append((_unittest_class(method, head.group("id")), method, word))
    return found


def outcomes_of(text: str, tests: Sequence[tuple[str, str]]) -> list[str]:
    """The outcome of each (class, name) in ``text``, or ``not run``; a per-device instance
    (``TestXCPU.test_y_cpu``) counts when the test itself is not named; a non-``ok`` decides."""
    results = _results(_lines(text))
    outcomes = []
    for scope, name in tests:
        cls = scope.split(".")[-1] if scope else ""
        words = [w for c, m, w in results if m == name and (not cls or c == cls)]
        if not words and cls:
            words = [w for c, m, w in results if c.startswith(cls) and c != cls
                     and m.startswith(name + "_")]
        outcomes.append(next((w for w in words if w != "ok"), "ok") if words else NOT_RUN)
    return outcomes
