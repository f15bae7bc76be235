"""`check`: the CI dry-run of the branch map. Writes nothing to upstream, fork or forge.

The only things written are objects in the local repository cache and a temporary worktree
that is removed before returning.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from backport.config.model import PatchSet, Project
from backport.config.patchfiles import Patch
from backport.config.validate import home_as_tilde
from backport.envs.overlay import scope_of
from backport.errors import BackportError, ErrorCode
from backport.git.cache import RepoCache
from backport.git.worktree import Worktree, cache_branch
from backport.pipeline.body_paths import absent_named_paths
from backport.pipeline.decide import Decision, Verdict, decide
from backport.pipeline.journal import Journal
from backport.pipeline.propagate import (
    SiblingSeries,
    recorded_series,
    sibling_series,
)
from backport.pipeline.session import Session
from backport.report.inert import inert


@dataclass
class Finding:
    """One line of the check report."""

    subject: str  # "branches.yaml", "branch v2.7.1", "put_metric on v2.7.1"
    check: str  # "schema", "exists upstream", "applies"
    ok: bool
    detail: str = ""
    variant: bool = False
    warning: bool = False  # ok, but worth a look (offline: an environment not built yet)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def problem(self) -> str:
        """The ``problem:`` line: the subject (it names the branch) and what is wrong."""
        return f"{self.subject}: {self.detail}"


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 environment``, ``2 environments``."""
    return f"{count} {word}" if count == 1 else f"{count} {words or word + 's'}"


def run_check(session: Session, names: list[str] | None, *, offline: bool,
              envs: bool = False) -> list[Finding]:
    """Validate the map and, unless ``offline``, that every patch set applies everywhere.

    An environment not built on this machine is a warning (a CI runner checks the map and the
    patches, not the hosts), a problem when ``envs`` asks for the environments as well.
    """
    project = session.project
    bm = project.branch_map
    patch_sets = [project.patch_sets[n] for n in names] if names else list(project.patch_sets.values())
    findings = [Finding(str(bm.path.name), "schema", True,
                        f"{plural(len(bm.targets), 'target branch', 'target branches')}, "
                        f"{plural(len(bm.environments), 'environment')}")]
    findings += _interpreters(project, required=envs)
    for ps in patch_sets:
        variants = ", ".join(sorted(ps.variants)) or "none"
        findings.append(Finding(f"patches/{ps.name}", "schema", True,
                                f"{len(ps.patches)} patch(es), variants: {variants}"))
        findings += _beyond_tests(ps)
        for target in ps.branches:
            fork_branch = ps.fork_branch(bm, target)
            findings.append(Finding(f"{ps.name} on {target}", "fork branch name", True, fork_branch,
                                    variant=target in ps.variants))
    if offline:
        return findings
    cache = session.cache
    # Every branch the map declares must exist, targeted by a patch set or not: CI checks the map.
    targets = sorted({t for ps in patch_sets for t in ps.branches} | set(bm.targets))
    # One fetch of them all; the branches are listed only when it names one the upstream lacks.
    fetched: dict[str, str] | None = None
    try:
        try:
            fetched = cache.fetch(targets)
            heads: dict[str, str | None] = dict(fetched)
        except BackportError as exc:
            if exc.code != ErrorCode.BRANCH_MISSING:
                raise
            heads = cache.remote_heads(targets)
    except BackportError as exc:
        findings.append(Finding(f"branches {', '.join(targets)}", "reachable", False, exc.message))
        return findings
    present = []
    for target in targets:
        ok = bool(heads.get(target))
        findings.append(Finding(f"branch {target}", "exists upstream", ok,
                                (heads[target] or "")[:9] if ok else
                                f"target branch '{target}' does not exist in {bm.upstream_url}"))
        if ok:
            present.append(target)
    if not present:
        return findings
    bases = fetched if fetched is not None else cache.fetch(present)
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
    """What the tests will not validate: a warning naming the files outside ``test/`` that the
    installed build does not hold; a note naming the torch_npu files run over it."""
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
    """Does the series `apply` would use go in on ``base``? The same decision as `apply`'s
    (`decide`): its own series first; where that conflicts, the branch's recorded result (a
    hand resolution, or a series carried from a sibling) and the siblings' series."""
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
    if decision.verdict is Verdict.ALREADY_APPLIED:
        return [Finding(subject, "applies", True, "already applied upstream (no PR needed)", variant)]
    if decision.verdict is Verdict.ALREADY_PRESENT:
        return [Finding(subject, "applies", True, f"already present: every test the patch adds is "
                        f"already on {target}: {decision.said} (no PR needed)", variant)]
    findings = [Finding(subject, "already present", True, f"already on {target}: {decision.said}",
                        variant, warning=True)] if decision.present else []
    worktree, result = decision.worktree, decision.result
    assert worktree is not None and result is not None
    try:
        head = result.head if result.status == "applied" else base
        missing = [t.path for t in ps.tests
                   if not _in_tree(worktree, head, t.path) and not _created(series, t.path)]
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
        how = ", its context lines ignored" if result.loose else ""
        return Finding(subject, "applies", True, f"its own series conflicts; "
                       f"{decision.source.label} applies instead{how}", variant, warning=True)
    if result.merged:
        return Finding(subject, "applies", True, f"with git am -3, but {', '.join(result.merged)} "
                       f"went in only through a 3-way merge: compare it with the newer branches",
                       variant, warning=True)
    detail = "cleanly with git am -3" if result.status == "applied" else "already applied"
    return Finding(subject, "applies", True, detail, variant)


def _in_tree(worktree: Worktree, commit: str, path: str) -> bool:
    """True when ``path`` is a file in ``commit`` (sparse checkouts do not matter; a file the
    run read there already is)."""
    name = f"{commit}:{path}"
    return worktree.memo.has(name) or worktree.git(["cat-file", "-e", name], check=False).ok


def _created(series: Sequence[Patch], path: str) -> bool:
    """True when one of the patches creates ``path`` (``new file`` in its diff)."""
    return any(diff.created and diff.new == path for patch in series for diff in patch.files)


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
        subject = f"branch {', '.join(users)}"
        findings.append(Finding(subject, "environment", not required, detail,
                                warning=not required))
    return findings


def summary_markdown(title: str, findings: Sequence[Finding]) -> str:
    """The check as one Markdown table, for a CI's step summary."""
    def cell(text: str) -> str:
        return inert(text, where="cell")  # file names and messages come from the patches

    rows = [f"### {title}", "", "| subject | check | result | detail |", "| --- | --- | --- | --- |"]
    for f in findings:
        mark = ("warn" if f.warning else "ok") if f.ok else "FAIL"
        detail = f.detail + (" (variant)" if f.variant else "")
        rows.append(f"| {cell(f.subject)} | {cell(f.check)} | {mark} | {cell(detail)} |")
    return "\n".join(rows) + "\n"
