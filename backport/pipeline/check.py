"""`check`: the CI dry-run of the branch map. Writes nothing to upstream, fork or forge: only
objects in the local repository cache and temporary worktrees removed before returning.
Each series is judged by `apply`'s own decision (`decide.decide`).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from backport.config.model import PatchSet, Project
from backport.config.validate import home_as_tilde
from backport.envs.overlay import scope_of
from backport.errors import BackportError
from backport.git.cache import RepoCache
from backport.git.run import git
from backport.git.worktree import Worktree, cache_branch
from backport.pipeline.decide import (
    Decision,
    SiblingSeries,
    Verdict,
    decide,
    recorded_series,
    sibling_series,
)
from backport.pipeline.journal import Journal
from backport.pipeline.session import Session, fetch_bases
from backport.report.untrusted import untrusted


@dataclass
class Finding:
    """One line of the check report."""

    subject: str
    check: str
    ok: bool
    detail: str = ""
    variant: bool = False
    warning: bool = False  # ok, but worth a look (offline: an environment not built yet)

    @property
    def problem(self) -> str:  # the ``problem:`` line
        return f"{self.subject}: {self.detail}"


def run_check(session: Session, names: list[str] | None, *, offline: bool,
              envs: bool = False) -> list[Finding]:
    """Validate the map and, unless ``offline``, that every set applies on every target."""
    project, bm = session.project, session.project.branch_map
    patch_sets = [project.patch_sets[n] for n in names] if names else list(project.patch_sets.values())
    branches, environments = len(bm.targets), len(bm.environments)
    findings = [Finding(str(bm.path.name), "schema", True,
                        f"{branches} target branch{'es' if branches != 1 else ''}, "
                        f"{environments} environment{'s' if environments != 1 else ''}")]
    findings += fork_findings(session, offline=offline)
    findings += _interpreters(project, required=envs)
    for ps in patch_sets:
        variants = ", ".join(sorted(ps.variants)) or "none"
        findings.append(Finding(f"patches/{ps.name}", "schema", True,
                                f"{len(ps.patches)} patch(es), variants: {variants}"))
        findings += _beyond_tests(ps)
        for target in ps.branches:
            findings.append(Finding(f"{ps.name} on {target}", "fork branch name", True,
                                    ps.fork_branch(bm, target), variant=target in ps.variants))
    if offline:
        return findings
    cache = session.cache
    targets = sorted({t for ps in patch_sets for t in ps.branches} | set(bm.targets))
    try:
        fetched = fetch_bases(cache, targets)
    except BackportError as exc:
        findings.append(Finding(f"branches {', '.join(targets)}", "reachable", False, exc.message))
        return findings
    bases = {target: head for target, head in fetched.items() if isinstance(head, str)}
    for target in targets:
        head = fetched[target]
        findings.append(Finding(f"branch {target}", "exists upstream", isinstance(head, str),
                                head[:9] if isinstance(head, str) else head.message))
    if bases:
        findings += _check_sets(project, cache, patch_sets, bases)
    return findings


def _check_sets(project: Project, cache: RepoCache, patch_sets: list[PatchSet],
                bases: dict[str, str]) -> list[Finding]:
    """Whether each set applies on each fetched target, and the paths its body names."""
    findings = []
    with tempfile.TemporaryDirectory(prefix="backport-check-") as tmp:
        for ps in patch_sets:
            try:
                journal = Journal.load(project.state_dir, ps.name, ps.api, persist=False)
            except BackportError as exc:  # check still checks; only the recorded results go
                findings.append(Finding(f"patches/{ps.name}", "run journal", True,
                                        f"{exc.message}; its recorded resolutions are not "
                                        f"tried", warning=True))
                journal = Journal(Path(tmp) / "unread.json", ps.name, ps.api, persist=False)
            for target in ps.branches:
                if target in bases:
                    findings += _check_applies(cache, ps, journal, target, bases[target],
                                               Path(tmp))
            findings += [Finding(f"{ps.name} on {target}", "body paths", True, detail, warning=True)
                         for target, detail in absent_named_paths(cache.path, ps, bases)]
    return findings


def _beyond_tests(ps: PatchSet) -> list[Finding]:
    """What the tests will not validate (a warning), and the torch_npu files run over it."""
    scope = scope_of(path for target in ps.branches for patch in ps.series_for(target)
                     for path in patch.paths)
    findings = []
    if scope.overlay:
        findings.append(Finding(f"patches/{ps.name}", "beyond tests", True,
                                f"{', '.join(scope.overlay)} run in the branch's version, laid "
                                f"over the installed torch_npu"))
    if scope.not_in_build:
        findings.append(Finding(f"patches/{ps.name}", "beyond tests", True,
                                f"{', '.join(scope.not_in_build)} not in the build the tests "
                                f"run on: a passing run does not validate them (draft PRs)",
                                warning=True))
    return findings


def _check_applies(cache: RepoCache, ps: PatchSet, journal: Journal, target: str, base: str,
                   tmp: Path) -> list[Finding]:
    """Does the series `apply` would use go in on ``base``?"""
    subject = f"{ps.name} on {target}"
    series = ps.series_for(target)
    variant = target in ps.variants
    carried = tmp / "carried" / f"{ps.name}-{target}".replace("/", "_")

    def others() -> list[SiblingSeries]:
        own = recorded_series(cache.path, journal, target, carried / "own")
        return [s for s in [own] if s is not None] + sibling_series(
            cache.path, ps, journal, target, out=carried)

    decision = decide(
        cache, base, series, [t.path for t in ps.tests],
        worktree=lambda: Worktree.create(
            cache, tmp / f"{ps.name}-{target}".replace("/", "_"),
            cache_branch(tmp, f"check/{ps.slug}/{target}"), base, ps.paths_for(target)),
        others=others)
    said = decision.present_said
    if decision.verdict is Verdict.ALREADY_APPLIED:
        return [Finding(subject, "applies", True, "already applied upstream (no PR needed)", variant)]
    if decision.verdict is Verdict.ALREADY_PRESENT:
        return [Finding(subject, "applies", True, f"already present: every test the patch adds is "
                        f"already on {target}: {said} (no PR needed)", variant)]
    findings = [Finding(subject, "already present", True, f"already on {target}: {said}",
                        variant, warning=True)] if decision.present else []
    worktree, result = decision.worktree, decision.result
    assert worktree is not None and result is not None
    head = result.head if result.status == "applied" else base
    created = {diff.new for patch in series for diff in patch.files if diff.created}
    try:  # a file in the commit, sparse checkout or not (one the run read is known)
        missing = [t.path for t in ps.tests if t.path not in created
                   and not worktree.memo.has(f"{head}:{t.path}")
                   and not worktree.git(["cat-file", "-e", f"{head}:{t.path}"], check=False).ok]
    finally:
        worktree.remove()
    findings.append(_applies(subject, decision, variant))
    for problem in decision.problems:
        findings.append(Finding(subject, "no shadowed test", False, problem, variant))
    for test in missing:
        findings.append(Finding(subject, "test exists", False,
                                f"patch set {ps.name}: test file {test} is not on branch {target} "
                                f"and the series does not create it", variant))
    return findings


def _applies(subject: str, decision: Decision, variant: bool) -> Finding:
    """The ``applies`` line of a series that was applied (or conflicted) in a worktree."""
    result = decision.result
    assert result is not None
    if decision.verdict is Verdict.CONFLICT:
        also = f"; also tried: {', '.join(decision.tried)}" if decision.tried else ""
        return Finding(subject, "applies", False, f"{result.message} (files: "
                       f"{', '.join(result.conflicts) or 'unknown'}){also}", variant)
    if decision.source is not None:
        how = ", its context lines ignored" if result.context_ignored else ""
        return Finding(subject, "applies", True, f"its own series conflicts; "
                       f"{decision.source.source.label} applies instead{how}", variant, warning=True)
    if result.merged:
        return Finding(subject, "applies", True, f"with git am -3, but {', '.join(result.merged)} "
                       f"went in only through a 3-way merge: compare it with the newer branches",
                       variant, warning=True)
    detail = "cleanly with git am -3" if result.status == "applied" else "already applied"
    return Finding(subject, "applies", True, detail, variant)


def _interpreters(project: Project, *, required: bool) -> list[Finding]:
    """Each target's environment interpreter exists: a warning, a problem when ``required``."""
    bm = project.branch_map
    findings = []
    for name, env in sorted(bm.environments.items()):
        users = [t.name for t in bm.targets.values() if t.env == name]
        if not users or env.interpreter.exists():
            continue
        detail = (f"environment '{name}' of branch {', '.join(users)} is not built here: "
                  f"interpreter {home_as_tilde(str(env.interpreter))} does not exist "
                  f"(`backport env setup` builds it)")
        findings.append(Finding(f"branch {', '.join(users)}", "environment", not required,
                                detail, warning=not required))
    return findings


_CODE = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"^[\w.-]+(?:/[\w.-]+)+$")


def named_paths(body: str) -> list[tuple[str, int]]:
    """Each path ``body.md`` names in backticks, with the line of its first mention."""
    found: dict[str, int] = {}
    for number, line in enumerate(body.splitlines(), start=1):
        for span in _CODE.findall(line):
            if _PATH.match(span) and "." in span.rsplit("/", 1)[-1]:
                found.setdefault(span, number)
    return list(found.items())


def absent_named_paths(repo: Path, ps: PatchSet, bases: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(target, sentence)`` for each target lacking a path ``body.md`` names (some has it)."""
    named = named_paths(ps.body or "")
    if not named:
        return []
    paths = [path for path, _ in named]
    targets = [t for t in ps.branches if t in bases]
    present = {t: set(git(["ls-tree", "-r", "--name-only", bases[t], "--", *paths],
                          cwd=repo).stdout.splitlines())
               | set(ps.touched_paths.get(t, ()))
               | {p for patch in ps.series_for(t) for p in patch.paths} for t in targets}
    ours = {path for path in paths if any(path in present[t] for t in targets)}
    return [(t, f"patches/{ps.name}/body.md line {line} names {path}, which is not on branch {t}")
            for t in targets for path, line in named if path in ours and path not in present[t]]


def summary_markdown(title: str, findings: Sequence[Finding]) -> str:
    """The check as one Markdown table, for a CI's step summary."""
    cell = partial(untrusted, where="cell")  # file names and messages come from the patches
    rows = [f"### {title}", "", "| subject | check | result | detail |", "| --- | --- | --- | --- |"]
    for f in findings:
        mark = ("warn" if f.warning else "ok") if f.ok else "FAIL"
        detail = f.detail + (" (variant)" if f.variant else "")
        rows.append(f"| {cell(f.subject)} | {cell(f.check)} | {mark} | {cell(detail)} |")
    return "\n".join(rows) + "\n"


def fork_findings(session: Session, *, offline: bool) -> list[Finding]:
    """Which fork the real run pushes to: the one set, or the token's login's."""
    bm = session.project.branch_map
    note = [Finding("fork", "set", True, bm.fork_note, warning=True)] if bm.fork_note else []
    if bm.fork:
        return [*note, Finding("fork", "pushed to", True, f"{bm.fork} (set in {bm.path.name})")]
    follows = f"follows the token's login: {bm.fork_shown}"
    if offline:
        return [*note, Finding("fork", "pushed to", True, f"{follows} (offline: not asked)")]
    forge = session.forge.real()
    if forge.missing():
        return [*note, Finding("fork", "pushed to", True, f"{follows} (no token here to ask)")]
    try:
        named = bm.with_login(forge.current_user())
    except BackportError as exc:
        return [*note, Finding("fork", "pushed to", True, f"{follows}; asking who the token is "
                               f"failed: {exc.message}", warning=True)]
    return [*note, Finding("fork", "pushed to", True, f"{named.fork} (the token's login)")]
