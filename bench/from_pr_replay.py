"""Replay Ascend/pytorch's real bot backports through `apply --from-pr` and plain cherry-pick.

Finds, in a local copy of Ascend/pytorch (``BACKPORT_REAL_REPO``), the squash merges since
``--since`` on v2.7.1, v2.11.0, v2.12.0 and master of the sync bot's branches
(``sync-prN-…``, ``[sync] PR-N`` titles) and of GitCode's cherry-pick (``cherry-pick-mr-N-…``)
whose source is a squash commit naming ``!N`` on another of those branches (by default those
whose source touches a test file, as a patch set needs one). For each one, on the
target's state just before the real backport (its parent):

- **plain**: ``git cherry-pick`` of the source commit;
- **from-PR**: ``backport apply --from-pr N --branch T --no-push --skip-tests`` — the same source
  proof (``git/source_pr.landed``), patch set writing and ``git am -3`` the real command runs —
  offline, with ``forge: local``: the local forge learns PR N from its squash commit on a mapped
  branch (``!N merge <head> into <base>``; its files those of the commit, its merge time the
  commit's, its body the PR's description; ``docs/apply.md``, "Offline, from the history
  alone"), as GitCode records it (no ``merge_commit_sha``).

Each route's result is **exact** (the tree the real backport left), **divergent** (it applies
but leaves another tree), **conflict**, or **refused** (from-PR only: the route stops before
applying, with its sentence).

    BACKPORT_REAL_REPO=/work/.mirror/Ascend+pytorch/repo .venv/bin/python bench/from_pr_replay.py
    … --since 2025-09-01 --limit 24 --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backport.demo.sandbox import write_project  # noqa: E402
from backport.git.patch_export import test_files  # noqa: E402
from tests.helpers.project import PATCHES, run_app  # noqa: E402

MAPPED = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
_BOT = re.compile(r"^!(?P<own>\d+) merge (?:sync-pr(?P<sync>\d+)-\S*|"
                  r"cherry-pick-mr-(?P<pick>\d+)-\S*) into \S+$", re.MULTILINE)
_SYNC_TITLE = re.compile(r"^\[sync\] PR-(?P<n>\d+)")


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=check,
                          env={**os.environ, "LANG": "C", "GIT_TERMINAL_PROMPT": "0"})


@dataclass(frozen=True)
class Case:
    """One real backport: PR ``number``'s squash commit ``source`` on ``base``, carried onto
    ``target`` by ``backport`` (its squash commit there)."""

    target: str
    backport: str
    number: int
    base: str
    source: str
    kind: str  # "sync" | "cherry-pick"


_OWN = re.compile(r"^(?:!(\d+) merge \S+ into \S+|See merge request: Ascend/pytorch!(\d+))\s*$",
                  re.MULTILINE)


def _own_numbers(message: str) -> set[int]:
    """The PRs a squash message is the merge of (GitCode's two forms)."""
    return {int(a or b) for a, b in _OWN.findall(message)}


def _first_parent(repo: Path, branch: str, since: str) -> list[tuple[str, str]]:
    out = git(repo, "log", "--first-parent", f"--since={since}", "--format=%H%x00%B%x01",
              branch).stdout
    return [tuple(item.strip("\n").split("\0", 1)) for item in out.split("\x01")  # type: ignore[misc]
            if "\0" in item]


def find_cases(repo: Path, since: str) -> list[Case]:
    """Every bot backport since ``since`` whose source is on another mapped branch, oldest
    first."""
    named: dict[tuple[str, int], str] = {}  # (branch, N) -> the oldest commit naming !N
    for branch in MAPPED:
        for sha, message in _first_parent(repo, branch, "2024-01-01"):  # newest first
            for number in _own_numbers(message):
                named[(branch, number)] = sha
    cases = []
    for target in MAPPED:
        for sha, message in _first_parent(repo, target, since):
            bot = _BOT.search(message)
            title = _SYNC_TITLE.match(message)
            if bot:
                number, kind = int(bot["sync"] or bot["pick"]), "sync" if bot["sync"] else \
                    "cherry-pick"
            elif title:
                number, kind = int(title["n"]), "sync"
            else:
                continue
            for base in MAPPED:
                if base == target:
                    continue
                source = named.get((base, number))  # the oldest: the PR's own squash merge
                if source:
                    if len(git(repo, "rev-list", "--parents", "-1", source).stdout.split()) == 2:
                        cases.append(Case(target, sha, number, base, source, kind))
                    break
    return sorted(cases, key=lambda c: int(git(repo, "log", "-1", "--format=%ct",
                                               c.backport).stdout))


def touches_tests(repo: Path, case: Case) -> bool:
    """Whether the source changes a test file (a patch set needs one)."""
    paths = git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", case.source).stdout
    return bool(test_files(paths.split()))


def outcome(repo: Path, tree: str | None, case: Case) -> str:
    if tree is None:
        return "conflict"
    want = git(repo, "rev-parse", f"{case.backport}^{{tree}}").stdout.strip()
    return "exact" if tree == want else "divergent"


def plain_pick(scratch: Path, work: Path, case: Case) -> str:
    """``git cherry-pick`` of the source onto the backport's parent, in a worktree of a scratch
    repository that borrows the copy's objects (the copy itself is never written), sparse to
    the files the source changes (the copy lacks blobs over 4 MiB)."""
    wt = work / f"pick-{case.number}-{case.target}"
    paths = git(scratch, "diff-tree", "--no-commit-id", "--name-only", "-r", case.source).stdout
    git(scratch, "worktree", "add", "--quiet", "--no-checkout", "--detach", str(wt),
        f"{case.backport}^")
    try:
        git(wt, "sparse-checkout", "set", "--no-cone", *[f"/{p}" for p in paths.split()])
        git(wt, "checkout", "--quiet", "--detach", f"{case.backport}^")
        done = git(wt, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                   "cherry-pick", "--allow-empty", case.source, check=False)
        tree = git(wt, "rev-parse", "HEAD^{tree}").stdout.strip() if done.returncode == 0 \
            else None
        return outcome(scratch, tree, case)
    finally:
        git(scratch, "worktree", "remove", "--force", str(wt), check=False)


class FromPr:
    """One project (``forge: local``) and one cache for every case: the upstream's refs are
    set per case; the local forge learns each PR from its squash commit."""

    def __init__(self, mirror: Path, work: Path) -> None:
        self.mirror, self.work = mirror, work
        self.upstream = self.borrowing(work / "upstream.git")
        fork = self.borrowing(work / "fork.git")
        self.project = work / "project"
        write_project(self.project, self.upstream, fork, PATCHES, sys.executable)
        (self.project / "patches" / PATCHES.name).rename(work / "unused-set")
        self.env = {"BACKPORT_CACHE": str(work / "cache")}

    def borrowing(self, path: Path) -> Path:
        subprocess.run(["git", "init", "--quiet", "--bare", str(path)], check=True)
        (path / "objects" / "info" / "alternates").write_text(
            str((self.mirror / "objects").resolve()) + "\n", encoding="utf-8")
        git(path, "config", "uploadpack.allowFilter", "true")
        git(path, "config", "uploadpack.allowAnySHA1InWant", "true")
        return path

    def body(self, case: Case) -> dict[str, bool]:
        """What the PR body of the target says (`backport preview`, no forge): its source PR,
        an API line (a set whose PR names none has none), an issue it does not have."""
        shown = run_app(self.project, "preview", "--api", f"pr-{case.number}", "--branch",
                        case.target, env=self.env).out
        spec = yaml.safe_load((self.project / "patches" / f"pr-{case.number}" /
                               "patch.yaml").read_text("utf-8"))
        return {"names_source": f"[Ascend/pytorch!{case.number}]" in shown,
                "api_line": "- API：" in shown, "has_api": "api" in spec,
                "issue_claimed": "Issue：`" in shown and "issue" not in spec}

    def replay(self, case: Case) -> tuple[str, str]:
        """(outcome, the route's sentence when it stopped)."""
        for branch in MAPPED:  # the base at its real tip, the target just before the backport
            ref = f"{case.backport}^" if branch == case.target else branch
            sha = git(self.mirror, "rev-parse", f"{ref}^{{commit}}").stdout.strip()
            git(self.upstream, "update-ref", f"refs/heads/{branch}", sha)
        result = run_app(self.project, "apply", "--from-pr", str(case.number), "--branch",
                         case.target, "--no-push", "--skip-tests", "--force", "--json",
                         env=self.env)
        if result.code == 2 or not result.out.strip().startswith("{"):
            return "refused", result.err.strip().splitlines()[-1] if result.err else ""
        (branch,) = result.json()["branches"]
        if branch["status"] in ("conflict", "failed"):
            return "conflict", branch.get("message", "")
        commit = branch.get("commit")
        if not commit:
            return "refused", f"{branch['status']}: {branch.get('message', '')}"
        cache = next(p.parent for p in (self.work / "cache").glob("*/HEAD"))
        tree = git(cache, "rev-parse", f"{commit}^{{tree}}").stdout.strip()
        return outcome(self.mirror, tree, case), ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--since", default="2025-09-01")
    parser.add_argument("--limit", type=int, default=24, help="newest N cases (0: all)")
    parser.add_argument("--all-changes", action="store_true",
                        help="also the sources that touch no test file (from-PR refuses them)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    mirror = Path(os.environ.get("BACKPORT_REAL_REPO") or "")
    if not (mirror / "objects").is_dir():
        raise SystemExit("error: set BACKPORT_REAL_REPO to a local copy of Ascend/pytorch")
    started = time.monotonic()
    cases = find_cases(mirror, args.since)
    found = len(cases)
    with_tests = [c for c in cases if touches_tests(mirror, c)]
    if not args.all_changes:
        cases = with_tests
    if args.limit:
        cases = cases[-args.limit:]
    rows = []
    with tempfile.TemporaryDirectory(prefix="from-pr-replay-") as tmp:
        work = Path(tmp)
        route = FromPr(mirror, work)
        scratch = route.borrowing(work / "scratch.git")
        for case in cases:
            plain = plain_pick(scratch, work, case)
            via, why = route.replay(case)
            body = route.body(case) if via != "refused" else {}
            rows.append({**asdict(case), "plain": plain, "from_pr": via, "why": why, **body})
            print(f"{case.kind:11} !{case.number} {case.base} -> {case.target}: "
                  f"plain {plain}, from-PR {via}{'  (' + why + ')' if why else ''}",
                  file=sys.stderr, flush=True)
    counts = {r: {k: sum(1 for row in rows if row[r] == k)
                  for k in ("exact", "divergent", "conflict", "refused")}
              for r in ("plain", "from_pr")}
    bodies = {"names_source": sum(1 for r in rows if r.get("names_source")),
              "api_line_without_api": sum(1 for r in rows
                                          if r.get("api_line") and not r.get("has_api")),
              "issue_claimed_without_one": sum(1 for r in rows if r.get("issue_claimed"))}
    report = {"since": args.since, "found": found, "with_tests": len(with_tests),
              "replayed": len(rows), "counts": counts, "bodies": bodies,
              "seconds": round(time.monotonic() - started, 1), "cases": rows}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{found} bot backports since {args.since} with a source on another mapped "
              f"branch, {len(with_tests)} of them touching a test file; replayed the newest "
              f"{len(rows)} in {report['seconds']}s")
        for name, by in counts.items():
            print(f"  {name:8} " + ", ".join(f"{k} {v}" for k, v in by.items()))
        print(f"  bodies: {bodies['names_source']} name their source PR, "
              f"{bodies['api_line_without_api']} an API line without an API, "
              f"{bodies['issue_claimed_without_one']} an issue the set has not")


if __name__ == "__main__":
    main()
