"""The evidence block's one table: each line of it and how it is written.

A branch's evidence is a title, ``KEY=value`` lines and a result section, in the order of
:data:`TABLE`. Each :class:`Field` row names its key and writes its value from a branch's
:class:`Facts` (``None`` leaves the line out); :mod:`backport.report.body` writes through
:func:`written`. The evidence is for reviewers and is never read back: the other hosts read the
branch's record from the hidden line of ``record_block``. A new key is one row here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from backport.config.model import SourcePr
from backport.envs.model import AUTOLOAD, NOT_FOUND
from backport.records import (
    SKIP_NO_TORCH,
    SKIP_ON_REQUEST,
    SKIP_SAID,
    BranchRecord,
    EnvEvidence,
    TestResult,
)
from backport.report.summary import summary_lines
from backport.report.untrusted import untrusted

NOT_PROBED = "not probed yet"  # no run has read the branch's environment yet
NOT_RUN = "none (not run)"
NO_HEAD = "none (no commit on the fork branch)"
RESULT = "RESULT:"  # the heading of the result section
TIMED_OUT = "TIMED OUT"
NO_SUMMARY = "no test summary"
SKIPPED = "skipped on request"
SKIPPED_NO_TORCH = "skipped: no interpreter with torch on the host that ran it"
# A summary line of the test's output that would read as a line of the block's own (a key, the
# result heading, a timeout) is written after this prefix, so a reviewer tells them apart.
QUOTED = "> "
AUTOLOAD_NOTE = f"ran with {AUTOLOAD}=0 (torch_npu not loaded)"
# The STALE= values: the head was pushed by this tool but not tested, or by someone else.
STALE_UNTESTED = ("the result below is of TESTED_COMMIT; HEAD_COMMIT, which the fork branch now "
                  "holds, was not tested by this run")
STALE_MOVED = ("the result below is of TESTED_COMMIT; HEAD_COMMIT was pushed to the fork branch "
               "by someone else and was not tested by this tool")

_TIMED_OUT = re.compile(r"^TIMED OUT(?: after (?P<seconds>\d+)s)?$")
_KEY_LINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Facts:
    """What one branch's evidence is written from."""

    record: BranchRecord
    upstream: str  # owner/repo of the upstream
    api: str | None  # None: the set names no API (no API= line)
    configured_env: str | None = None  # the environment branches.yaml names for the target
    source: SourcePr | None = None  # the upstream PR the set was made from
    # The branches whose records say they were run in an environment (None: not known); only
    # those are named as sharing this branch's environment.
    ran_in_envs: tuple[str, ...] | None = None

    @property
    def test(self) -> TestResult | None:
        """The test result, when tests ran (not skipped on request)."""
        test = self.record.test
        return test if test and not test.skipped else None

    @property
    def env(self) -> EnvEvidence | None:
        return self.record.env


@dataclass(frozen=True)
class Field:
    """One ``KEY=value`` line: its key and how its value is written."""

    key: str
    write: Callable[[Facts], str | None]  # the value; None leaves the line out

    @property
    def prefix(self) -> str:
        return f"{self.key}="

    def lines(self, facts: Facts) -> list[str]:
        value = self.write(facts)
        return [] if value is None else [f"{self.key}={value}"]


@dataclass(frozen=True)
class Block:
    """Lines of the evidence that are no ``KEY=value`` (the title, the result section)."""

    write: Callable[[Facts], list[str]]


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def _val(value: object, missing: str = NOT_FOUND) -> str:
    return missing if value is None or value == "" else one_line(value)


def _probed(attr: str, key: str) -> Field:
    """A value the probe read; "not probed yet" when no run has read the environment."""
    def write(facts: Facts) -> str:
        env = facts.env
        return _val(env.fact(attr) if env else None, NOT_FOUND if env else NOT_PROBED)
    return Field(key, write)


def _title(facts: Facts) -> list[str]:
    rec = facts.record
    return [f"VALIDATION EVIDENCE / {facts.upstream} / {rec.fork_branch} → {rec.target}"]


def _visible_write(facts: Facts) -> str:
    env = facts.env
    if not env:
        return NOT_PROBED
    count = env.fact("npu_count")
    if count is None:
        return NOT_FOUND
    devices = env.fact("visible_devices")
    return f"{count} (PHYSICAL NPU {devices})" if count and devices else str(count)


def _env_write(facts: Facts) -> str:
    env = facts.env
    name = _val((env.name if env else None) or facts.configured_env)
    shared = [s for s in env.shared_with if s != facts.record.target
              and (facts.ran_in_envs is None or s in facts.ran_in_envs)] if env else []
    if shared and env and env.name:
        name += f" (shared with {', '.join(shared)})"
    return name


def _series_write(facts: Facts) -> str | None:
    chain = []
    source = facts.record.series_source
    while source is not None:
        chain.append(f"{source.branch} {source.kind}")
        source = source.via
    return " < ".join(chain) or None


def _files_write(files: tuple[str, ...]) -> str | None:
    return ", ".join(files) or None


def _tested_write(facts: Facts) -> str | None:
    test = facts.test
    return one_line(test.commit) if test and facts.record.stale else None


def _stale_write(facts: Facts) -> str | None:
    if not (facts.test and facts.record.stale):
        return None
    return STALE_MOVED if facts.record.fork_sha else STALE_UNTESTED


def _skipped_said(test: TestResult | None) -> str:
    """Why the tests did not run, as the evidence says it."""
    cause = test.skip_cause if test is not None else SKIP_ON_REQUEST
    if cause == SKIP_ON_REQUEST:
        return f"{SKIPPED}: --skip-tests"
    return SKIPPED_NO_TORCH if cause == SKIP_NO_TORCH else SKIP_SAID[cause]


def _result_write(facts: Facts) -> list[str]:
    rec, test = facts.record, facts.test
    if rec.skipped:
        return [f"RESULT: not run ({_skipped_said(facts.record.test)})"]
    if not test:
        return [f"RESULT: not run ({rec.status})"]
    lines = [RESULT, *([quoted(one_line(s)) for s in summary_lines(test)] or [NO_SUMMARY])]
    if test.timed_out:
        seconds = test.duration
        lines.append(f"{TIMED_OUT} after {seconds:.0f}s" if isinstance(seconds, int | float)
                     else TIMED_OUT)
    return lines


def quoted(line: str) -> str:
    """A summary line as the result section writes it: behind :data:`QUOTED` when it would
    read as a line of the block (a key, ``RESULT:``, ``TIMED OUT``, no summary)."""
    structural = (_KEY_LINE.match(line) or line.startswith(("RESULT", QUOTED.rstrip()))
                  or _TIMED_OUT.match(line) or line == NO_SUMMARY)
    return QUOTED + line if structural else line


def _exit_write(facts: Facts) -> str:
    test = facts.test
    if not test:
        return NOT_RUN
    if test.exit_code is not None:
        return str(test.exit_code)
    return "none (killed)" if test.timed_out else "none"


def _patch_tests_write(facts: Facts) -> str | None:
    test = facts.test
    if not (test and test.patch_tests):
        return None
    return ", ".join(f"{name} {outcome}" for name, outcome in test.patch_tests)


def _source_write(facts: Facts) -> str | None:
    source = facts.source
    return f"{facts.upstream}!{source.number}@{source.commit}" if source else None


def _changes(attr: str, key: str) -> Field:
    """The series' files beyond tests of one kind (``ChangeScope``), where it names any."""
    def write(facts: Facts) -> str | None:
        test = facts.test
        return _files_write(getattr(test.changes, attr)) if test else None
    return Field(key, write)


def _note_write(facts: Facts) -> str:
    env = facts.env
    note = env.note if env else None
    if env and env.autoload_disabled and AUTOLOAD not in str(note or ""):
        note = f"{note}; " if note else ""
        note += AUTOLOAD_NOTE
    return _val(note, "none")


TITLE = Block(_title)
API = Field("API", lambda f: f.api)
# The upstream PR the set was made from: "Ascend/pytorch!42810@<sha>".
SOURCE = Field("SOURCE", _source_write)
TARGET_BRANCH = Field("TARGET_BRANCH", lambda f: f.record.target)
HEAD_COMMIT = Field("HEAD_COMMIT", lambda f: f.record.head or NO_HEAD)
PLATFORM = _probed("platform", "PLATFORM")
PYTHON = _probed("python", "PYTHON")
TORCH = _probed("torch", "TORCH")
TORCH_NPU = _probed("torch_npu", "TORCH_NPU")
CANN = _probed("cann", "CANN")
NPU = _probed("npu_model", "NPU")
VISIBLE_NPU = Field("VISIBLE_NPU", _visible_write)
ENVIRONMENT = Field("ENVIRONMENT", _env_write)
RUNNER = Field("RUNNER", lambda f: _val(f.record.test.runner if f.record.test else None, NOT_RUN))
COMMAND = Field("COMMAND", lambda f: _val(f.record.test.command if f.record.test else None,
                                          NOT_RUN))
SERIES_FROM = Field("SERIES_FROM", _series_write)
MERGED_FILES = Field("MERGED_FILES", lambda f: _files_write(f.record.merged_files))
LOOSE_FILES = Field("LOOSE_FILES", lambda f: _files_write(f.record.loose_files))
TESTED_COMMIT = Field("TESTED_COMMIT", _tested_write)
# Where the result is not of the head: whether someone else moved the fork branch since.
STALE = Field("STALE", _stale_write)
RESULT_SECTION = Block(_result_write)
EXIT_CODE = Field("test_exit_code", _exit_write)
PATCH_TESTS = Field("PATCH_TESTS", _patch_tests_write)
# The series' files beyond tests: run in the branch's version over the installed torch_npu, not in
# the build that ran (the result does not validate them), not exercised by any test.
OVERLAY = _changes("overlay", "OVERLAY")
NOT_IN_BUILD = _changes("not_in_build", "NOT_IN_BUILD")
NOT_EXERCISED = _changes("not_exercised", "NOT_EXERCISED")
NOTE = Field("NOTE", _note_write)
# Written only where the host refused the sandbox (tests ran without a PID namespace of their
# own); a run in its sandbox writes no line, as every run before this key did.
ISOLATION = Field("ISOLATION", lambda f: "none" if f.test and f.test.isolation == "none" else None)

# Every line of the evidence, in the order it is written.
TABLE: tuple[Field | Block, ...] = (
    TITLE, API, SOURCE, TARGET_BRANCH, HEAD_COMMIT, PLATFORM, PYTHON, TORCH, TORCH_NPU, CANN, NPU,
    VISIBLE_NPU, ENVIRONMENT, RUNNER, ISOLATION, COMMAND, SERIES_FROM, MERGED_FILES, LOOSE_FILES,
    TESTED_COMMIT, STALE, RESULT_SECTION, EXIT_CODE, PATCH_TESTS, OVERLAY, NOT_IN_BUILD,
    NOT_EXERCISED, NOTE,
)
KEYS = tuple(row.key for row in TABLE if isinstance(row, Field))


def written(facts: Facts) -> list[str]:
    """The evidence of one branch, line by line."""
    lines: list[str] = []
    for row in TABLE:
        lines += row.lines(facts) if isinstance(row, Field) else row.write(facts)
    return [untrusted(line, where="code") for line in lines]
