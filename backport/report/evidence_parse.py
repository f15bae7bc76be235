"""Reading a PR body's evidence block back: the one parser of what `body.evidence_text` writes.

The evidence is ``KEY=value`` lines plus a ``RESULT:`` section (summary lines up to
``test_exit_code=``). Keys are kept generically, in order, so a key this module does not know
still reads and is written back unchanged. :func:`record_of` turns the evidence of one branch's
PR into the journal record a body is rendered from, with only the facts the evidence states.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backport.envs.model import AUTOLOAD, NOT_FOUND, ChangeScope, Probe
from backport.records import BranchRecord, EnvEvidence, PrInfo, SeriesSource, TestResult
from backport.report import regions as rg
from backport.states import Status

NOT_PROBED = "not probed yet"  # no run has read the branch's environment yet
_UNPROBED = (NOT_PROBED, "not probed")  # as written now, and by earlier versions
NOT_RUN = "none (not run)"
RESULT = "RESULT:"
EXIT_KEY = "test_exit_code"
PATCH_TESTS_KEY = "PATCH_TESTS"  # each test the patch adds and its outcome: "name ok, name FAIL"
# The series' files beyond tests (``ChangeScope``): run in the branch's version over the installed
# torch_npu, not in the build that ran (the result does not validate them), not exercised.
CHANGES_KEYS = (("OVERLAY", "overlay"), ("NOT_IN_BUILD", "not_in_build"),
                ("NOT_EXERCISED", "not_exercised"))
TIMED_OUT = "TIMED OUT"
NO_SUMMARY = "no test summary"
SKIPPED = "skipped on request"
AUTOLOAD_NOTE = f"ran with {AUTOLOAD}=0 (torch_npu not loaded)"
# The STALE= values: the head was pushed by this tool but not tested, or by someone else.
STALE_UNTESTED = ("the result below is of TESTED_COMMIT; HEAD_COMMIT, which the fork branch now "
                  "holds, was not tested by this run")
STALE_MOVED = ("the result below is of TESTED_COMMIT; HEAD_COMMIT was pushed to the fork branch "
               "by someone else and was not tested by this tool")

_KEY = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
_NOT_RUN = re.compile(r"^RESULT: not run \((?P<why>.*)\)$")
_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_SHARED = re.compile(r"^(?P<name>.*?) \(shared with (?P<others>.*)\)$")
_VISIBLE = re.compile(r"^(?P<count>\d+)(?: \(PHYSICAL NPU (?P<devices>.*)\))?$")
_TIMED_OUT = re.compile(r"^TIMED OUT(?: after (?P<seconds>\d+)s)?$")


@dataclass(frozen=True)
class Evidence:
    """One branch's evidence as read from a PR body: its lines, in order, as written."""

    lines: tuple[str, ...]

    @property
    def fields(self) -> dict[str, str]:
        """Every ``KEY=value`` line outside the result section (first occurrence wins)."""
        found: dict[str, str] = {}
        for index, line in enumerate(self.lines):
            match = _KEY.match(line)
            if match and not self._in_result(index):
                found.setdefault(match["key"], match["value"])
        return found

    def get(self, key: str) -> str | None:
        return self.fields.get(key)

    def _result_span(self) -> tuple[int, int] | None:
        """Indexes of the lines between ``RESULT:`` and ``test_exit_code=`` (exclusive)."""
        for start, line in enumerate(self.lines):
            if line == RESULT:
                for end in range(start + 1, len(self.lines)):
                    if self.lines[end].startswith(f"{EXIT_KEY}="):
                        return start + 1, end
                return start + 1, len(self.lines)
        return None

    def _in_result(self, index: int) -> bool:
        span = self._result_span()
        return span is not None and span[0] <= index < span[1]

    @property
    def result_lines(self) -> tuple[str, ...]:
        """The lines of the ``RESULT:`` section (summary lines, ``TIMED OUT``); () when not run."""
        span = self._result_span()
        return self.lines[span[0]:span[1]] if span else ()

    @property
    def not_run(self) -> str | None:
        """Why no test ran (``RESULT: not run (why)``), or None when a result is given."""
        for line in self.lines:
            match = _NOT_RUN.match(line)
            if match:
                return match["why"]
        return None

    @property
    def head(self) -> str | None:
        """The commit the PR showed when the evidence was written."""
        return _sha(self.get("HEAD_COMMIT"))

    @property
    def tested(self) -> str | None:
        """The commit the result is of (``TESTED_COMMIT`` where stale, else the head)."""
        return _sha(self.get("TESTED_COMMIT")) or self.head

    def with_lines(self, lines: list[str]) -> Evidence:
        return Evidence(tuple(lines))


def series_lines(source: SeriesSource | None, merged: tuple[str, ...],
                 loose: tuple[str, ...]) -> list[str]:
    """How the series went in, where it is not simply the branch's own series: ``SERIES_FROM``
    (the sibling's series, then where that came from: ``v2.12.0 propagated < master
    resolution``), ``MERGED_FILES`` (3-way merge only), ``LOOSE_FILES`` (context ignored)."""
    lines = []
    chain = []
    while source is not None:
        chain.append(f"{source.branch} {source.kind}")
        source = source.via
    if chain:
        lines.append(f"SERIES_FROM={' < '.join(chain)}")
    if merged:
        lines.append(f"MERGED_FILES={', '.join(merged)}")
    if loose:
        lines.append(f"LOOSE_FILES={', '.join(loose)}")
    return lines


SOURCE_KEY = "SOURCE"  # the upstream PR a set was made from: "Ascend/pytorch!42810@<sha>"
_SOURCE = re.compile(r"^(?P<repo>[^\s!@]+/[^\s!@]+)!(?P<number>\d+)@(?P<sha>[0-9a-f]{40})$")


def source_line(upstream: str, number: int, commit: str) -> str:
    """``SOURCE=<upstream>!N@<sha>``: the PR the series was made from and the commit it carries."""
    return f"{SOURCE_KEY}={upstream}!{number}@{commit}"


def source_of(evidence: Evidence) -> tuple[str, int, str] | None:
    """(upstream, PR number, commit) of the evidence's ``SOURCE=`` line, or None."""
    match = _SOURCE.match(evidence.get(SOURCE_KEY) or "")
    return (match["repo"], int(match["number"]), match["sha"]) if match else None


def changes_lines(changes: ChangeScope) -> list[str]:
    """``OVERLAY=``, ``NOT_IN_BUILD=``, ``NOT_EXERCISED=``: each where it names a file."""
    return [f"{key}={', '.join(getattr(changes, field))}" for key, field in CHANGES_KEYS
            if getattr(changes, field)]


def _changes(evidence: Evidence) -> ChangeScope:
    return ChangeScope(**{field: _files(evidence, key) for key, field in CHANGES_KEYS})


def _series(evidence: Evidence) -> SeriesSource | None:
    source = None
    for link in reversed((evidence.get("SERIES_FROM") or "").split(" < ")):
        branch, _, kind = link.strip().rpartition(" ")
        if not branch or not kind:
            return None
        source = SeriesSource(branch=branch, kind=kind, via=source)
    return source


def _files(evidence: Evidence, key: str) -> tuple[str, ...]:
    value = evidence.get(key)
    return tuple(value.split(", ")) if value else ()


def _sha(value: str | None) -> str | None:
    return value if value and _SHA.match(value) else None


def parse_evidence(text: str) -> Evidence:
    """The evidence of a fence's text (with or without the ```text fence)."""
    lines = [line.rstrip("\r") for line in text.strip().splitlines()]
    if lines and lines[0].startswith("```"):
        lines = lines[1:]
    if lines and lines[-1].startswith("```"):
        lines = lines[:-1]
    return Evidence(tuple(lines))


def read_evidence(body: str | None) -> Evidence | None:
    """The evidence block of a PR body, or None when it has none (or no ``HEAD_COMMIT``)."""
    if not body:
        return None
    region = rg.find_regions(body).get(rg.EVIDENCE)
    if region is None:
        return None
    evidence = parse_evidence(region.content(body))
    return evidence if "HEAD_COMMIT" in evidence.fields else None


def _value(evidence: Evidence, key: str) -> str | None:
    value = evidence.get(key)
    return None if value in (None, "", NOT_FOUND, *_UNPROBED) else value


def _probe(evidence: Evidence, env_name: str) -> Probe | None:
    if evidence.get("PLATFORM") in (None, *_UNPROBED):
        return None
    count, devices = None, None
    visible = _VISIBLE.match(evidence.get("VISIBLE_NPU") or "")
    if visible:
        count, devices = int(visible["count"]), visible["devices"]
    return Probe(env_name=env_name, interpreter="", platform=_value(evidence, "PLATFORM"),
                 python=_value(evidence, "PYTHON"),
                 packages={"torch": _value(evidence, "TORCH"),
                           "torch_npu": _value(evidence, "TORCH_NPU")},
                 cann=_value(evidence, "CANN"), torch_npu_loads=None, torch_npu_error=None,
                 npu_model=_value(evidence, "NPU"), npu_count=count, visible_devices=devices)


def _env(evidence: Evidence, target: str) -> EnvEvidence | None:
    shown = _value(evidence, "ENVIRONMENT")
    if shown is None:
        return None
    shared = _SHARED.match(shown)
    name = shared["name"] if shared else shown
    others = tuple(shared["others"].split(", ")) if shared else ()
    note = evidence.get("NOTE") or ""
    note = "" if note == "none" else note
    autoload_off = f"{AUTOLOAD}=0" in note
    if note.endswith(AUTOLOAD_NOTE):  # the phrase the renderer adds to the device note
        note = note[: -len(AUTOLOAD_NOTE)].removesuffix("; ")
    return EnvEvidence(name=name, shared_with=(target, *others), note=note,
                       autoload_disabled=autoload_off, probe=_probe(evidence, name))


def _test(evidence: Evidence) -> TestResult | None:
    why = evidence.not_run
    if why is not None:
        return TestResult.skipped_on_request() if why.startswith(SKIPPED) else None
    if RESULT not in evidence.lines:
        return None
    summary: list[str] = []
    timed_out, duration = False, None
    for line in evidence.result_lines:
        match = _TIMED_OUT.match(line)
        if match:
            timed_out = True
            duration = float(match["seconds"]) if match["seconds"] else None
        elif line != NO_SUMMARY:
            summary.append(line)
    code_text = evidence.get(EXIT_KEY) or ""
    code = int(code_text) if code_text.lstrip("-").isdigit() else None
    command = evidence.get("COMMAND")
    runner = evidence.get("RUNNER")
    listed = evidence.get(PATCH_TESTS_KEY)
    patch_tests = tuple((name, outcome) for name, _, outcome in
                        (item.partition(" ") for item in listed.split(", "))) if listed else ()
    return TestResult(ok=code == 0 and not timed_out and all(o == "ok" for _, o in patch_tests),
                      exit_code=code, patch_tests=patch_tests,
                      summary=", ".join(summary), summary_lines=tuple(summary),
                      duration=duration, command=None if command == NOT_RUN else command,
                      runner=None if runner == NOT_RUN else runner, timed_out=timed_out,
                      commit=evidence.tested, changes=_changes(evidence))


def record_of(evidence: Evidence, *, target: str, fork_branch: str,
              pr: PrInfo | None = None) -> BranchRecord:
    """The record of a branch as its PR's evidence states it (status ``done``/``test-failed``
    for a result, else the status the evidence names)."""
    test = _test(evidence)
    if test is not None:
        status = Status.TEST_FAILED if test.ok is False else Status.DONE
    else:
        why = evidence.not_run or ""
        status = Status(why) if why in Status._value2member_map_ else Status.FAILED
    head = evidence.head
    moved = evidence.get("STALE") == STALE_MOVED
    return BranchRecord(target=target, fork_branch=fork_branch, status=status, commit=head,
                        pushed_sha=head, fork_sha=head if moved else None, test=test,
                        env=_env(evidence, target), pr=pr, series_source=_series(evidence),
                        merged_files=_files(evidence, "MERGED_FILES"),
                        loose_files=_files(evidence, "LOOSE_FILES"))
