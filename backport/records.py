"""The journal's records: one `BranchRecord` per (patch set, target branch).

`pipeline/` writes them and `report/` reads them. Each is a frozen dataclass turned into JSON
and back by `backport.codec`. A record changes only by a named transition, a method returning
the new record (`applied`, `tested`, `pushed`...; `Journal.change` checks each move against
`states.MOVES`); every transition that ends an apply attempt goes through `reset_apply`, the
one place that replaces that attempt's outcome. `BranchRecord.published` is the record as a
PR body carries it for the other hosts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backport.envs.model import ChangeScope, Probe, TestRun
from backport.states import Status

SKIP_ON_REQUEST = "request"  # the user passed --skip-tests
SKIP_NO_TORCH = "no-torch"  # no interpreter with torch on the host (the demo without one)
SKIP_DRY_NO_ENVS = "dry-no-envs"  # a dry run where environments are not built (never in a PR)
SKIP_NO_TESTS = "no-tests"  # a set made from a PR that adds or changes no test lists none
SKIP_CAUSE_TEXT = {SKIP_ON_REQUEST: "--skip-tests",
             SKIP_NO_TORCH: "no interpreter with torch on the host that ran it",
             SKIP_DRY_NO_ENVS: "environments not built: dry run",
             SKIP_NO_TESTS: "no test: the source PR adds or changes no test"}


@dataclass(frozen=True)
class TestResult:
    """The tests of a patch set on one branch, folded into one result (or skipped on request)."""

    ok: bool | None  # None: not run (--skip-tests)
    exit_code: int | None  # the first non-zero exit code; None when killed or not run
    ran: int | None = None  # tests counted by the summaries; None when no summary said
    summary: str = ""  # the summary lines joined with ", "
    summary_lines: tuple[str, ...] = ()
    duration: float | None = None  # wall seconds of every run
    command: str | None = None  # as the evidence shows it
    runner: str | None = None  # "warm" | "isolated"
    timed_out: bool = False
    log: str | None = None  # the logs, "; "-joined
    skipped: bool = False  # not run on purpose: see ``skip_cause``
    skip_cause: str = "request"  # a key of SKIP_CAUSE_TEXT
    runs: tuple[TestRun, ...] = ()  # one per test file
    commit: str | None = None  # the commit the result is of
    # (test, outcome) of every test the patch adds, as -v showed it: "ok", "FAIL", "not run"...
    patch_tests: tuple[tuple[str, str], ...] = ()
    changes: ChangeScope = ChangeScope()
    isolation: str | None = None  # "none" when any run had no sandbox

    @property
    def patch_tests_ok(self) -> bool:
        """Every test the patch adds ran and passed (True when it adds none)."""
        return all(outcome == "ok" for _, outcome in self.patch_tests)

    @property
    def not_in_build(self) -> bool:
        """The series changes files the build that ran lacks: a pass does not validate it."""
        return bool(self.changes.not_in_build)

    @classmethod
    def skipped_for(cls, cause: str = SKIP_ON_REQUEST) -> TestResult:
        """Not run on purpose, for ``cause`` (a key of SKIP_CAUSE_TEXT)."""
        return cls(ok=None, exit_code=None, summary=f"not run ({SKIP_CAUSE_TEXT[cause]})",
                   skipped=True, skip_cause=cause)

    @classmethod
    def of_runs(cls, runs: Sequence[TestRun], commit: str | None,
                patch_tests: Sequence[tuple[str, str]] = (),
                changes: ChangeScope | None = None) -> TestResult:
        """The runs folded into one: ok when every run passed and every added test says ok."""
        lines = tuple(line for r in runs for line in r.summary)
        return cls(
            ran=sum(r.ran or 0 for r in runs) if any(r.ran is not None for r in runs) else None,
            ok=all(r.ok for r in runs) and all(outcome == "ok" for _, outcome in patch_tests),
            exit_code=next((r.exit_code for r in runs if r.exit_code != 0), 0),
            summary=", ".join(lines), summary_lines=lines,
            duration=round(sum(r.duration for r in runs), 3),
            command="; ".join(r.command for r in runs), runner=runs[0].runner if runs else None,
            timed_out=any(r.timed_out for r in runs), log="; ".join(r.log for r in runs),
            runs=tuple(runs), commit=commit, patch_tests=tuple(patch_tests),
            changes=changes or ChangeScope(),
            isolation=next((r.isolation for r in runs if r.isolation == "none"),
                           runs[0].isolation if runs else None),
        )


@dataclass(frozen=True)
class EnvEvidence:
    """The environment half of the evidence: the probe as read, or only the name when unread."""

    name: str
    shared_with: tuple[str, ...] = ()  # every target branch configured with this environment
    note: str = ""  # the device verdict's note
    autoload_disabled: bool = False  # tests ran with torch_npu's autoload off
    probe: Probe | None = None  # None: the environment could not be read

    def fact(self, name: str) -> Any:
        """A probed value by its `Probe` attribute name (``torch`` too); None when not read."""
        return getattr(self.probe, name) if self.probe is not None else None


@dataclass(frozen=True)
class PrInfo:
    """The PR of one fork branch. ``None`` fields: a record written before they existed."""

    number: int
    url: str
    decorated: bool | None = None  # labels, assignees, reviewers and the comment were set
    linked: bool | None = None  # the issue link was made (older records: assumed)
    commented_sha: str | None = None  # the fork branch's commit when the comment was posted
    refused: tuple[str, ...] = ()  # best-effort writes the forge refused ("link", "comment")
    unverified: bool = False  # opened, but not yet read back and judged (a re-run judges it)
    title: str | None = None  # the set's title when last sent or kept (None: older records)

    def refusing(self, write: str) -> PrInfo:
        """The forge refused ``write``: it is not tried again."""
        return dataclasses.replace(self, refused=(*self.refused, write))

    @classmethod
    def opened(cls, number: int) -> PrInfo:
        """A PR the forge just opened, journaled before it was read back and judged."""
        return cls(number=int(number), url="", unverified=True)

    def judged(self, url: str) -> PrInfo:
        return dataclasses.replace(self, url=url, unverified=False)

    def link_made(self) -> PrInfo:
        return dataclasses.replace(self, linked=True)

    def decorations_made(self) -> PrInfo:
        return dataclasses.replace(self, decorated=True)

    def commented(self, sha: str | None) -> PrInfo:
        """The comment was posted while the fork branch was at ``sha``."""
        return dataclasses.replace(self, commented_sha=sha)


@dataclass(frozen=True)
class SeriesSource:
    """The sibling whose series went in where the branch's own conflicted."""

    branch: str
    kind: str  # "resolution" (by hand, `backport continue`), "variant" (saved) or "propagated"
    via: SeriesSource | None = None  # "propagated": where that sibling's own result came from

    @property
    def origin(self) -> SeriesSource:
        """The resolution or variant at the start of the chain."""
        return self.via.origin if self.via else self

    @property
    def hops(self) -> tuple[str, ...]:
        """The branches a chained series passed between its origin and ``branch``, origin first."""
        if self.via is None or self.via.via is None:
            return ()
        return (*self.via.hops, self.via.branch)

    @property
    def label(self) -> str:
        """``the v2.11.0 resolution``; a chain: ``the v2.11.0 result, itself from … via …``."""
        if self.via is None:
            return f"the {self.branch} {self.kind}"
        through = f" via {', '.join(self.hops)}" if self.hops else ""
        return f"the {self.branch} result, itself from {self.origin.label}{through}"


@dataclass(frozen=True)
class ExistingTest:
    """A test the patch adds that the target branch already defines, and the commit adding it."""

    path: str
    name: str  # Class.test_name, or test_name for a module-level test
    line: int
    commit: str | None = None  # abbreviated sha
    subject: str = ""

    def describe(self) -> str:
        """``Class.test_x (path, line 56), added by 1292bcfa1 "subject"``."""
        where = f"{self.name} ({self.path}, line {self.line})"
        return f'{where}, added by {self.commit} "{self.subject}"' if self.commit else where


@dataclass(frozen=True)
class ProposedPr:
    """Another PR into the target that already carries the set's source PR (open or merged)."""

    number: int
    url: str
    state: str  # "open" | "merged"
    kind: str  # how it names the source: "sync" | "cherry-pick" | "backport" | "body"
    title: str = ""


@dataclass(frozen=True)
class BranchRecord:
    """Where one target branch of one patch set stands, and the facts its PR body shows."""

    target: str
    fork_branch: str
    status: Status = Status.PENDING
    base: str | None = None  # the upstream head the series was applied on
    commit: str | None = None  # the fork branch's commit made by this run
    push_intent: str | None = None  # a push of this commit was started
    pushed_sha: str | None = None  # what this tool last pushed to the fork branch
    test: TestResult | None = None
    env: EnvEvidence | None = None
    pr: PrInfo | None = None
    conflicts: tuple[str, ...] = ()
    worktree: str | None = None
    message: str = ""  # for the maintainer's terminal; never in a PR body
    manual: bool = False  # the commit was made by hand (`continue` after a conflict)
    error_code: str | None = None  # the ErrorCode that failed the branch
    fork_sha: str | None = None  # where someone else moved the fork branch; cleared by a push
    mismatches: tuple[str, ...] = ()  # env-mismatch: "torch: expected 2.7.1, found 2.13.0+cpu"
    warnings: tuple[str, ...] = ()  # what the forge refused (labels, comment); the PR is open
    series_source: SeriesSource | None = None  # None: the branch's own series went in
    tried_sources: tuple[str, ...] = ()  # labels of the siblings' series tried in vain
    merged_files: tuple[str, ...] = ()  # files that went in only through the 3-way merge
    loose_files: tuple[str, ...] = ()  # files placed with their context lines ignored
    conflict_snapshot: dict[str, str | None] | None = None  # {path: blob} as `git am` left them
    closed_prs: tuple[int, ...] = ()  # PRs backport closed because the forge opened them wrong
    added_tests: tuple[str, ...] = ()  # the tests the series adds, as path::Class::name
    present: tuple[ExistingTest, ...] = ()  # those the target already defines
    proposed: ProposedPr | None = None  # already-proposed: the other PR that carries the source

    def named(self, target: str, fork_branch: str) -> BranchRecord:
        """This record with ``target`` and ``fork_branch`` where it names none."""
        return dataclasses.replace(self, target=self.target or target,
                                   fork_branch=self.fork_branch or fork_branch)

    def reset_apply(self, *, conflicts: Sequence[str] = (),
                    series_source: SeriesSource | None = None, tried_sources: Sequence[str] = (),
                    merged_files: Sequence[str] = (),
                    loose_files: Sequence[str] = ()) -> BranchRecord:
        """The outcome of an apply attempt replaces the previous one's."""
        return dataclasses.replace(
            self, conflicts=tuple(conflicts), series_source=series_source,
            tried_sources=tuple(tried_sources), merged_files=tuple(merged_files),
            loose_files=tuple(loose_files), proposed=None)

    def with_fork_branch(self, fork_branch: str) -> BranchRecord:
        return dataclasses.replace(self, fork_branch=fork_branch)

    def error_cleared(self) -> BranchRecord:
        return dataclasses.replace(self, error_code=None)

    def already_upstream(self, base: str, message: str) -> BranchRecord:
        return dataclasses.replace(self.reset_apply(), status=Status.ALREADY_APPLIED, base=base,
                                   commit=None, present=(), message=message)

    def no_change(self, base: str, message: str) -> BranchRecord:
        return dataclasses.replace(self.reset_apply(), status=Status.ALREADY_APPLIED, base=base,
                                   commit=None, worktree=None, message=message)

    def tests_found(self, added: Sequence[str],
                    present: Sequence[ExistingTest]) -> BranchRecord:
        return dataclasses.replace(self, added_tests=tuple(added), present=tuple(present))

    def already_present(self, base: str, message: str) -> BranchRecord:
        return dataclasses.replace(self.reset_apply(), status=Status.ALREADY_PRESENT, base=base,
                                   commit=None, message=message)

    def already_proposed(self, pr: ProposedPr, message: str) -> BranchRecord:
        """Another PR carries the source: the test result goes, the commit stays for later."""
        return dataclasses.replace(self.reset_apply(), status=Status.ALREADY_PROPOSED,
                                   proposed=pr, test=None, message=message, error_code=None)

    def conflicted(self, base: str, message: str, conflicts: Sequence[str], worktree: str,
                   tried_sources: Sequence[str],
                   snapshot: dict[str, str | None] | None) -> BranchRecord:
        return dataclasses.replace(
            self.reset_apply(conflicts=conflicts, tried_sources=tried_sources),
            status=Status.CONFLICT, message=message, base=base, commit=None, worktree=worktree,
            conflict_snapshot=snapshot)

    def unusable(self, base: str, message: str, worktree: str, code: str, *,
                 series_source: SeriesSource | None, tried_sources: Sequence[str],
                 merged_files: Sequence[str], loose_files: Sequence[str]) -> BranchRecord:
        return dataclasses.replace(
            self.reset_apply(series_source=series_source, tried_sources=tried_sources,
                             merged_files=merged_files, loose_files=loose_files),
            status=Status.FAILED, message=message, base=base, commit=None, worktree=worktree,
            error_code=str(code))

    def applied(self, base: str, commit: str, worktree: str, added_tests: Sequence[str], *,
                series_source: SeriesSource | None, tried_sources: Sequence[str],
                merged_files: Sequence[str], loose_files: Sequence[str]) -> BranchRecord:
        """The series is committed on ``base`` as ``commit``; any earlier test result is void."""
        return dataclasses.replace(
            self.reset_apply(series_source=series_source, tried_sources=tried_sources,
                             merged_files=merged_files, loose_files=loose_files),
            status=Status.APPLIED, base=base, commit=commit, worktree=worktree, message="",
            test=None, manual=False, added_tests=tuple(added_tests))

    def still_conflicted(self, conflicts: Sequence[str], message: str) -> BranchRecord:
        return dataclasses.replace(self, conflicts=tuple(conflicts), message=message)

    def resolved_by_hand(self, commit: str, message: str) -> BranchRecord:
        return dataclasses.replace(self, status=Status.APPLIED, commit=commit, conflicts=(),
                                   manual=True, test=None, message=message)

    def aborted(self, message: str) -> BranchRecord:
        """Back to the start; what was pushed and the PR are remembered."""
        return dataclasses.replace(self.reset_apply(), status=Status.PENDING, commit=None,
                                   worktree=None, test=None, manual=False, message=message)

    def tested(self, test: TestResult, env: EnvEvidence | None, message: str) -> BranchRecord:
        return dataclasses.replace(self, status=Status.TESTED, test=test, env=env,
                                   message=message)

    def test_failed(self, message: str, test: TestResult, env: EnvEvidence) -> BranchRecord:
        return dataclasses.replace(self, status=Status.TEST_FAILED, message=message, test=test,
                                   env=env)

    def env_missing(self, message: str, env: EnvEvidence) -> BranchRecord:
        return dataclasses.replace(self, status=Status.ENV_MISSING, message=message, env=env)

    def env_mismatched(self, message: str, env: EnvEvidence,
                       mismatches: Sequence[str]) -> BranchRecord:
        return dataclasses.replace(self, status=Status.ENV_MISMATCH, message=message, env=env,
                                   test=None, mismatches=tuple(mismatches))

    def env_unavailable(self, message: str, env: EnvEvidence) -> BranchRecord:
        return dataclasses.replace(self, status=Status.ENV_UNAVAILABLE, message=message,
                                   env=env, test=None)

    def failed(self, status: Status, message: str, code: str | None) -> BranchRecord:
        return dataclasses.replace(self, status=status, message=message,
                                   error_code=None if code is None else str(code))

    def fork_diverged(self, message: str, fork_sha: str | None,
                      code: str | None = None) -> BranchRecord:
        return dataclasses.replace(self.failed(Status.FORK_DIVERGED, message, code),
                                   fork_sha=fork_sha)

    def fork_moved(self, fork_sha: str | None) -> BranchRecord:
        return dataclasses.replace(self, fork_sha=fork_sha)

    def planned(self, message: str) -> BranchRecord:
        return dataclasses.replace(self, status=Status.PLANNED, message=message)

    def push_started(self, sha: str) -> BranchRecord:
        return dataclasses.replace(self, push_intent=sha)

    def pushed(self, sha: str) -> BranchRecord:
        return dataclasses.replace(self, status=Status.PUSHED, pushed_sha=sha, push_intent=None,
                                   fork_sha=None)

    def pr_closed(self, number: int) -> BranchRecord:
        if (pr := self.pr) is not None and pr.number == int(number):
            pr = dataclasses.replace(pr, unverified=False)  # judged: closed as wrong
        return dataclasses.replace(self, closed_prs=(*self.closed_prs, int(number)), pr=pr)

    def with_pr(self, pr: PrInfo) -> BranchRecord:
        return dataclasses.replace(self, pr=pr)

    def read_from_pr(self, number: int, url: str) -> BranchRecord:
        """This record as read from PR ``number``; what it knew of that PR is kept."""
        pr = self.pr if self.pr is not None and self.pr.number == number else PrInfo(number, url)
        return dataclasses.replace(self, pr=dataclasses.replace(pr, url=url))

    def finished(self, status: Status, message: str, pr: PrInfo,
                 warnings: Sequence[str]) -> BranchRecord:
        return dataclasses.replace(self, pr=pr, status=status, message=message,
                                   warnings=tuple(warnings))

    def worktree_removed(self) -> BranchRecord:
        return dataclasses.replace(self, worktree=None)

    @property
    def fork_head(self) -> str | None:
        """The commit the fork branch (and so the PR) shows, as far as the journal knows."""
        return self.fork_sha or self.pushed_sha

    @property
    def head(self) -> str | None:
        """The commit this branch's fork branch shows, else the commit the run made."""
        return self.fork_head or self.commit

    @property
    def env_name(self) -> str | None:
        return self.env.name if self.env else None

    @property
    def skipped(self) -> bool:
        return bool(self.test and self.test.skipped)

    @property
    def stale(self) -> bool:
        """A test ran, but of another commit than the one the fork branch shows."""
        tested = self.test.commit if self.test and not self.test.skipped else None
        return bool(tested and self.head and tested != self.head)

    @property
    def linked(self) -> bool:
        """The PR exists and the issue link was made (older records: assumed)."""
        return self.pr is not None and self.pr.linked is not False

    def published(self) -> BranchRecord:
        """The record as its PR body carries it: nothing of this host (paths, logs, messages)."""
        test = self.test and dataclasses.replace(
            self.test, log=None,
            runs=tuple(dataclasses.replace(run, log="", env_vars={}) for run in self.test.runs))
        probe = self.env.probe if self.env else None
        if probe is not None:
            probe = dataclasses.replace(
                probe, interpreter="", torch_npu_error=None,
                packages={name: probe.packages.get(name) for name in ("torch", "torch_npu")})
        env = self.env and dataclasses.replace(self.env, probe=probe)
        # The PR only with what the forge refused: a body rendered before the PR stays true.
        pr = self.pr and self.pr.refused and PrInfo(
            number=self.pr.number, url=self.pr.url, linked=self.pr.linked,
            refused=self.pr.refused) or None
        status = Status.DONE if self.status == Status.PUSHED else self.status
        return dataclasses.replace(
            self, status=status, push_intent=None, test=test, env=env, pr=pr, worktree=None,
            message="", manual=False, error_code=None, warnings=(), tried_sources=(),
            conflict_snapshot=None, closed_prs=(), proposed=None)

