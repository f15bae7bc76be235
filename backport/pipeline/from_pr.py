"""The one place a PR of the upstream becomes a patch set (`new --from-pr`, `apply --from-pr`,
`trigger`), and where a patch set folder is written, whole (`new --from` too).

What the PR landed is found in the cache repository (``git/source_pr.py``); `apply --from-pr N`
keeps ``patches/pr-<N>/`` while PR N is unchanged and remakes it, every step redone, once it
changed. A local forge learns a PR it lacks from its squash commit.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from backport.config import load_patch_set
from backport.config.model import Project, SourcePr
from backport.config.validate import display_path
from backport.envs.model import AUTOLOAD
from backport.envs.probe import infer_device
from backport.errors import BackportError, ConfigError
from backport.forge.base import PrFile, SourcePrInfo
from backport.forge.local import LocalForge
from backport.git.patch_export import export_patch_set, file_at, test_files, touched_files
from backport.git.source_pr import SourceCommits, describe_passed_over, landed, open_commits
from backport.git.squash_message import backport_message
from backport.pipeline.session import Session
from backport.redact import redact
from backport.titles import strip_branch_tags

Say = Callable[[str], None]  # where the lines about the set being written go
# The API a PR body names: the evidence's `API=<name>` or the template's "API：`<name>`".
_BODY_API = re.compile(r"^(?:API=|-\s*API[：:]\s*`)([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)",
                       re.MULTILINE)


@dataclass(frozen=True)
class Source:
    """A PR as read now: the forge's view and the commits it carries."""

    info: SourcePrInfo
    commits: SourceCommits

    def record(self) -> SourcePr:
        return SourcePr(number=self.info.number, base=self.info.base, commit=self.commits.commit,
                        merged=self.info.merged, found_by=self.commits.found_by)


def read_source(session: Session, number: int) -> Source:
    """PR ``number`` of the map's upstream, its commits fetched into the session's cache."""
    forge, cache = session.forge.real(), session.cache
    if missing := forge.missing():
        raise ConfigError(f"PR !{number} cannot be read: {'; '.join(missing)}")
    if isinstance(forge, LocalForge) and not forge.has_pr(number):
        learn_from_history(session, forge, number)
    info = forge.get_source_pr(number)
    if info.state == "closed":
        raise BackportError("usage", f"PR !{number} of {session.project.branch_map.upstream} was "
                                     "closed without being merged, so it carries no change to "
                                     "backport")
    cache.fetch([info.base])
    if info.merged:
        pr_paths = {path for f in forge.pr_files(number) for path in f.paths}
        commits = landed(cache, info.base, number, info.merge_commit_sha, pr_paths=pr_paths,
                         merged_at=info.merged_at)
    else:
        commits = open_commits(cache, info.base, number)
    return Source(info, commits)


def learn_from_history(session: Session, forge: LocalForge, number: int) -> None:
    """Teach the local ``forge`` PR ``number`` from its squash commit on a mapped branch."""
    from backport.git.source_pr import find_squash_merge

    bm, branches = session.project.branch_map, list(session.project.branch_map.targets)
    session.cache.fetch(branches)
    found = find_squash_merge(session.cache, branches, number)
    if found is None:
        listed = (", ".join(branches[:-1]) + f" or {branches[-1]}" if len(branches) > 1
                  else branches[0])
        raise BackportError("forge", redact(
            f"PR !{number} is not in the local forge {forge.path}, and no commit on {listed} "
            f"of {bm.upstream_url} is its squash merge ('!{number} merge <head> into <base>'); "
            f"check the number, or fetch the upstream's history"))
    forge.add_source_pr(number=number, head=found.head, base=found.base, title=found.title,
                        body=found.body, author=found.author, merged_at=found.merged_at,
                        files=tuple(PrFile(old, new) for old, new in found.files))


def passed_over_line(source: Source) -> list[str]:
    """The commits on the base naming the PR but not taken as its change (none, usually)."""
    passed = source.commits.passed_over
    return [f"not taken as PR !{source.info.number}'s change although their message names it: "
            f"{describe_passed_over(passed)}"] if passed else []


def source_line(source: SourcePr, upstream: str) -> str:
    """One line on where a set's change comes from."""
    how = {"merge_commit_sha": "the PR's merge_commit_sha",
           "squash message": "the squash message on the base branch naming it",
           "head ref": f"its head ref refs/merge-requests/{source.number}/head"}[source.found_by]
    state = (f"merged into {source.base} as {source.commit[:12]}" if source.merged
             else f"not merged: its own commits up to {source.commit[:12]}")
    return f"{upstream}!{source.number} {state} (found by {how})"


def _api(info: SourcePrInfo, api: str | None, say: Say) -> str | None:
    """The API the set covers: given, else the one the PR's body names, else none."""
    if api:
        return api
    found = _BODY_API.search(info.body)
    if found:
        say(f"API {found.group(1)}: named in the body of PR !{info.number}")
        return found.group(1)
    say(f"PR !{info.number} names no API: the PR bodies leave out the docs audit and the API "
        f"line (pass --api FULL.NAME to `backport new` to name one)")
    return None


def _issues(info: SourcePrInfo, issues: tuple[int, ...], say: Say) -> tuple[int, ...]:
    """The issues each backport links: given, else every issue the PR links."""
    if issues:
        return issues
    if len(info.issues) != 1:
        linked = ", ".join(f"#{i}" for i in info.issues)
        say(f"PR !{info.number} links {linked}: every backport links them" if info.issues
            else f"PR !{info.number} links no issue: the backports link none")
    return tuple(dict.fromkeys(info.issues))


def write_from_pr(session: Session, dest: Path, source: Source, *, api: str | None,
                  issues: tuple[int, ...], title: str | None, say: Say) -> Path:
    """Write ``dest`` from ``source``'s commits in the session's cache repository."""
    project, repo = session.project, session.cache.path
    info, commits = source.info, source.commits
    tests = test_files(touched_files(repo, commits.rev))
    if not tests:
        say(f"PR !{info.number} adds or changes no test file: the set lists none, each branch "
            f"records its tests as not run and its PR body says so")
    branches = [t for t in project.branch_map.targets if t != info.base]
    if not branches:
        raise BackportError("usage", f"the branch map {project.branch_map.path} has no target "
                                     f"other than '{info.base}', the base of PR !{info.number}")
    record = source.record()
    say(f"source: {source_line(record, project.branch_map.upstream)}")
    for line in passed_over_line(source):
        say(line)
    spec: dict[str, object] = {}
    named = _api(info, api, say)
    if named:
        spec["api"] = named
    linked = _issues(info, issues, say)
    if linked:  # patch.yaml's `issue`: one number, or the list of several
        spec["issue"] = linked[0] if len(linked) == 1 else list(linked)
    spec |= {
        "title": title or strip_branch_tags(info.title, [info.base]),
        "source_pr": record.number, "source_base": record.base, "source_commit": record.commit,
        "source_merged": record.merged, "source_found_by": record.found_by,
        "branches": branches,
    }
    return write_patch_set(project, dest, repo, _backport_rev(session, source), tests, spec, say)


def _backport_rev(session: Session, source: Source) -> str:
    """A merged PR's squash commit with the change's own message; an open PR's commits."""
    from backport.git.source_pr import message_of, restate

    info, commits, repo = source.info, source.commits, session.cache.path
    if not info.merged or ".." in commits.rev:
        return commits.rev
    ref = f"{session.project.branch_map.upstream}!{info.number}"
    message = backport_message(message_of(repo, commits.commit), sha=commits.commit,
                               title=strip_branch_tags(info.title, [info.base]), source_ref=ref)
    return restate(repo, commits.commit, message)


def set_from_pr(session: Session, patches_dir: Path, number: int, say: Say, *,
                scratch: Path | None = None) -> tuple[str, list[str], bool]:
    """Make ``patches/pr-<N>/`` (in ``scratch``: dry), or keep it while the PR is unchanged."""
    dest = patches_dir / f"pr-{number}"
    kept, why = None, "it is not a folder"
    if dest.is_dir():
        try:
            kept, why = load_patch_set(dest, session.project.branch_map), "it names no source_pr"
        except ConfigError as exc:
            why = exc.message.rstrip(".")
    if dest.exists() and (kept is None or kept.source is None):
        raise BackportError("usage", f"{dest} exists but is not a set made from a PR ({why}); "
                                     f"move it away to make one from PR !{number}")
    old = kept.source if kept is not None else None
    source = read_source(session, number)
    new, upstream = source.record(), session.project.branch_map.upstream
    if old is not None and old == new:
        return dest.name, [f"{dest.name}: kept, made from {source_line(new, upstream)}, unchanged",
                           *passed_over_line(source)], False
    lines = []
    if old is not None:
        change = ("now merged" if new.merged and not old.merged else
                  f"new commits ({old.commit[:12]} → {new.commit[:12]})")
        lines.append(f"{dest.name}: made again, PR !{number} has changed since: {change}; "
                     f"every branch is done again")
    made = dest if scratch is None else scratch / dest.name
    write_from_pr(session, made, source, api=kept.api if kept else None,
                  issues=kept.issues if kept else (), title=None, say=say)
    if old is None:
        lines.append(f"{dest.name}: made from {source_line(new, upstream)}")
    if scratch is not None:
        lines.append(f"{dest.name}: dry run: the set is made in a temporary folder ({made}, "
                     f"removed at the end); the real run writes it to {dest}")
    return dest.name, lines, old is not None


def sets_from_prs(session: Session, patches_dir: Path, numbers: tuple[int, ...], say: Say,
                  error: Say, *, scratch: Path | None = None,
                  ) -> tuple[list[str], set[str], list[BackportError]]:
    """The sets of PRs ``numbers``: names, those made again, errors (one PR's is raised)."""
    made: list[str] = []
    redo: set[str] = set()
    unmade: list[BackportError] = []
    for number in dict.fromkeys(numbers):
        try:
            name, lines, remade = set_from_pr(session, patches_dir, number, say, scratch=scratch)
        except BackportError as exc:
            if len(numbers) == 1:
                raise
            error(f"error: PR !{number} is not backported: {exc.message}")
            unmade.append(exc)
            continue
        for line in lines:
            say(line)
        made.append(name)
        redo |= {name} if remade else set()
    return made, redo, unmade


def write_patch_set(project: Project, dest: Path, repo: Path, rev: str, tests: list[str],
                    spec: dict[str, object], say: Say) -> Path:
    """Export ``rev`` of ``repo`` into ``dest`` with a patch.yaml, whole or not at all."""
    sources = {path: text for path in tests if (text := file_at(repo, rev, path)) is not None}
    device, reasons = infer_device(sources)
    spec = {**spec, "tests": [{"path": path, "args": ["-v"]} for path in tests], "device": device}
    if "branches" in spec:  # after tests and device, as a maintainer writes it
        spec["branches"] = spec.pop("branches")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging_root = Path(tempfile.mkdtemp(prefix=".new-", dir=dest.parent))
    staging = staging_root / dest.name
    try:
        export_patch_set(repo, rev, staging, force=True)
        (staging / "patch.yaml").write_text(
            yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
        try:
            load_patch_set(staging, project.branch_map)
        except ConfigError as exc:
            message = exc.message.replace(str(staging), str(dest))
            raise ConfigError(message.replace(display_path(staging), display_path(dest))) from exc
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)
    files = sorted(p.name for p in dest.glob("*.patch"))
    say(f"wrote {dest}: {', '.join(files)} and patch.yaml (tests: {', '.join(tests)})")
    if device == "npu":
        say(f"device: npu, inferred because {'; '.join(reasons)}: the tests run only where "
            f"torch_npu loads and an NPU is visible (edit patch.yaml if they do not need one)")
    else:
        say("device: none, inferred because no test imports torch_npu or creates npu tensors: "
            f"the tests run with {AUTOLOAD}=0 where torch_npu cannot load")
    return dest
