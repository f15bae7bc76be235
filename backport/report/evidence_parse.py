"""Reading a PR body's evidence block back: the one parser of what `body.evidence_text` writes.

The evidence is ``KEY=value`` lines plus a result section (summary lines up to the exit code);
each line's key and how its value reads are rows of :mod:`backport.report.evidence_fields`.
Keys are kept generically, in order, so a key this module does not know still reads and is
written back unchanged. :func:`record_of` turns the evidence of one branch's PR into the journal
record a body is rendered from, with only the facts the evidence states.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backport.envs.model import ChangeScope, Probe
from backport.records import SKIP_NO_TORCH, BranchRecord, EnvEvidence, PrInfo, TestResult
from backport.report import evidence_fields as ef
from backport.report import regions as rg
from backport.states import Status

_KEY = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")


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
        """Indexes of the lines between the result heading and the exit code (exclusive)."""
        for start, line in enumerate(self.lines):
            if line == ef.RESULT:
                for end in range(start + 1, len(self.lines)):
                    if self.lines[end].startswith(ef.EXIT_CODE.prefix):
                        return start + 1, end
                return start + 1, len(self.lines)
        return None

    def _in_result(self, index: int) -> bool:
        span = self._result_span()
        return span is not None and span[0] <= index < span[1]

    @property
    def result_lines(self) -> tuple[str, ...]:
        """The lines of the result section (summary lines, ``TIMED OUT``); () when not run."""
        span = self._result_span()
        return self.lines[span[0]:span[1]] if span else ()

    @property
    def not_run(self) -> str | None:
        """Why no test ran (the result section says "not run" and why), or None when a result is given."""
        return next((why for why in map(ef.not_run_reason, self.lines) if why is not None), None)

    @property
    def head(self) -> str | None:
        """The commit the PR showed when the evidence was written."""
        return ef.HEAD_COMMIT.of(self.fields)

    @property
    def tested(self) -> str | None:
        """The commit the result is of (the tested commit where stale, else the head)."""
        return ef.TESTED_COMMIT.of(self.fields) or self.head


def _changes(fields: dict[str, str]) -> ChangeScope:
    return ChangeScope(overlay=ef.OVERLAY.of(fields), not_in_build=ef.NOT_IN_BUILD.of(fields),
                       not_exercised=ef.NOT_EXERCISED.of(fields))


def parse_evidence(text: str) -> Evidence:
    """The evidence of a fence's text (with or without the ```text fence)."""
    lines = [line.rstrip("\r") for line in text.strip().splitlines()]
    if lines and lines[0].startswith("```"):
        lines = lines[1:]
    if lines and lines[-1].startswith("```"):
        lines = lines[:-1]
    return Evidence(tuple(lines))


def read_evidence(body: str | None) -> Evidence | None:
    """The evidence block of a PR body, or None when it has none (or no head commit line)."""
    if not body:
        return None
    region = rg.find_regions(body).get(rg.EVIDENCE)
    if region is None:
        return None
    evidence = parse_evidence(region.content(body))
    return evidence if ef.HEAD_COMMIT.key in evidence.fields else None


def _probe(fields: dict[str, str], env_name: str) -> Probe | None:
    if not ef.is_probed(fields.get(ef.PLATFORM.key)):
        return None
    count, devices = ef.VISIBLE_NPU.of(fields)
    return Probe(env_name=env_name, interpreter="", platform=ef.PLATFORM.of(fields),
                 python=ef.PYTHON.of(fields),
                 packages={"torch": ef.TORCH.of(fields), "torch_npu": ef.TORCH_NPU.of(fields)},
                 cann=ef.CANN.of(fields), torch_npu_loads=None, torch_npu_error=None,
                 npu_model=ef.NPU.of(fields), npu_count=count, visible_devices=devices)


def _env(fields: dict[str, str], target: str) -> EnvEvidence | None:
    shown = ef.ENVIRONMENT.of(fields)
    if shown is None:
        return None
    name, others = shown
    note, autoload_off = ef.NOTE.of(fields)
    return EnvEvidence(name=name, shared_with=(target, *others), note=note,
                       autoload_disabled=autoload_off, probe=_probe(fields, name))


def _test(evidence: Evidence) -> TestResult | None:
    why = evidence.not_run
    if why is not None:
        if why.startswith(ef.SKIPPED_NO_TORCH):
            return TestResult.skipped_for(SKIP_NO_TORCH)
        return TestResult.skipped_for() if why.startswith(ef.SKIPPED) else None
    if ef.RESULT not in evidence.lines:
        return None
    fields = evidence.fields
    result = ef.read_result(evidence.result_lines)
    code = ef.EXIT_CODE.of(fields)
    patch_tests = ef.PATCH_TESTS.of(fields)
    return TestResult(ok=TestResult.passes(code == 0 and not result.timed_out, patch_tests),
                      exit_code=code, patch_tests=patch_tests,
                      summary=", ".join(result.summary), summary_lines=result.summary,
                      duration=result.duration, command=ef.COMMAND.of(fields),
                      runner=ef.RUNNER.of(fields), timed_out=result.timed_out,
                      commit=evidence.tested, changes=_changes(fields),
                      isolation=ef.ISOLATION.of(fields))


def record_of(evidence: Evidence, *, target: str, fork_branch: str,
              pr: PrInfo | None = None) -> BranchRecord:
    """The record of a branch as its PR's evidence states it (status ``done``/``test-failed``
    for a result, else the status the evidence names)."""
    test = _test(evidence)
    fields = evidence.fields
    if test is not None:
        status = Status.TEST_FAILED if test.ok is False else Status.DONE
    else:
        why = evidence.not_run or ""
        status = Status(why) if why in {s.value for s in Status} else Status.FAILED
    head = evidence.head
    return BranchRecord(target=target, fork_branch=fork_branch, status=status, commit=head,
                        pushed_sha=head, fork_sha=head if ef.STALE.of(fields) else None,
                        test=test, env=_env(fields, target), pr=pr,
                        series_source=ef.SERIES_FROM.of(fields),
                        merged_files=ef.MERGED_FILES.of(fields),
                        loose_files=ef.LOOSE_FILES.of(fields))
