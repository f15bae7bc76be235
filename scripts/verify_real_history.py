#!/usr/bin/env python3
"""Replay the real backport history of Ascend/pytorch through `backport new` and `backport apply`.

Corpus (the rule): every non-merge commit on ``master`` since ``--since`` (committer date) whose
subject names exactly one non-merge commit since that date on each of the four branches
(v2.7.1, v2.11.0, v2.12.0, master), where each of those four commits touches only paths under
``test/``. Each such subject is one case; its four commits are "what really merged", and each
commit's parent is its branch "as it stood just before".

Per case, in a scratch directory: an upstream whose four branches are those parents and a fork
(both bare repositories borrowing the mirror's objects), a project on the local forge, then
``backport new CASE --from <master commit>`` and ``backport apply --api CASE --skip-tests``, run
in this process through the tool's own command line. Every file either the source commit or
the landed commit touches is compared, blob for blob, with what really merged.

Then a simulated maintainer resolves the newest conflicted branch of each case with the files
that really merged there, runs ``backport continue`` (which tries that resolution on the other
conflicted branches, and each result it gives on the branches below) and ``backport apply``
again; the pairs are compared once more.

Needs the mirror (``--mirror`` or ``BACKPORT_REAL_REPO``, a git directory); it is only read.
Example: ``python scripts/verify_real_history.py --limit 5 --jobs 1``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backport.cli import cli  # noqa: E402
from backport.config.model import newest_first  # noqa: E402

BRANCHES = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
SOURCE = "master"
SINCE = "2026-03-01"
IDENTITY = ("backport-replay", "backport-replay@localhost")
API = "replay.case"
ISSUE = 3216


@dataclass(frozen=True)
class Case:
    """One change that landed on every branch: its subject and the landed commit per branch."""

    name: str
    subject: str
    landed: dict[str, str]


@dataclass
class Pair:
    """The replay of one case on one branch."""

    case: str
    branch: str
    status: str = ""
    outcome: str = ""  # identical / different / not-applied
    source: str = "original"  # original / propagated / hand
    tried: list[str] = field(default_factory=list)
    merged: bool = False  # went in only through a 3-way merge (or, carried, entry by entry)
    loose: bool = False  # a carried series placed with its context lines ignored
    differing: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # files left conflicted
    shared: bool = False  # the branch's landed commit is the source commit (before the split)


# -- git --------------------------------------------------------------------------------------
def _git(args: Sequence[str], *, git_dir: Path | None = None, cwd: Path | None = None,
         check: bool = True) -> str:
    argv = ["git", *([f"--git-dir={git_dir}"] if git_dir else []), *args]
    env = dict(os.environ, LANG="C", LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
    return proc.stdout


def _commits_since(mirror: Path, branch: str, since: str) -> dict[str, list[tuple[str, list[str]]]]:
    """subject -> [(sha, touched paths)] of the non-merge commits on ``branch`` since ``since``."""
    out = _git(["log", "--no-merges", f"--since-as-filter={since}", "--format=%x01%H%x02%s", "--name-only",
                "--no-renames", branch, "--"], git_dir=mirror)
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for chunk in out.split("\x01")[1:]:
        head, _, rest = chunk.partition("\n")
        sha, subject = head.split("\x02", 1)
        found.setdefault(subject, []).append((sha, [p for p in rest.splitlines() if p]))
    return found


def select_cases(mirror: Path, since: str = SINCE) -> list[Case]:
    """The corpus (see the module docstring), oldest master commit first."""
    per = {b: _commits_since(mirror, b, since) for b in BRANCHES}
    cases = []
    for subject in reversed(list(per[SOURCE])):
        landed = {}
        for branch in BRANCHES:
            hits = per[branch].get(subject, [])
            if len(hits) != 1 or not hits[0][1]:
                break
            sha, paths = hits[0]
            if not all(p.startswith("test/") for p in paths):
                break
            landed[branch] = sha
        else:
            cases.append(Case(f"r{len(cases) + 1:03d}", subject, landed))
    return cases


def _blob(repo: Path, commit: str, path: str) -> str | None:
    out = _git(["rev-parse", "--verify", "--quiet", f"{commit}:{path}"], git_dir=repo, check=False)
    return out.strip() or None


def _touched(repo: Path, commit: str) -> list[str]:
    out = _git(["diff-tree", "--no-commit-id", "--name-only", "-r", "--no-renames", commit],
               git_dir=repo)
    return [p for p in out.splitlines() if p]


# -- the scratch world of one case ------------------------------------------------------------
def _borrowing_repo(path: Path, mirror: Path, heads: dict[str, str]) -> Path:
    """A bare repository using the mirror's objects, with ``heads`` as its branches."""
    _git(["init", "--quiet", "--bare", str(path)])
    (path / "objects" / "info" / "alternates").write_text(f"{mirror / 'objects'}\n")
    for branch, sha in heads.items():
        _git(["update-ref", f"refs/heads/{branch}", sha], git_dir=path)
    _git(["config", "uploadpack.allowFilter", "true"], git_dir=path)
    _git(["config", "uploadpack.allowAnySHA1InWant", "true"], git_dir=path)
    return path


def _project(root: Path, upstream: Path, fork: Path) -> Path:
    project = root / "project"
    project.mkdir(parents=True)
    python = sys.executable
    config = {
        "forge": "local", "upstream": "Ascend/pytorch", "fork": "replay/pytorch",
        "fork_branch": "replay-{slug}-{target}",
        "upstream_url": str(upstream), "fork_url": str(fork),
        "environments": {"replay": {"python": python}},
        "branches": {t: {"env": "replay"} for t in BRANCHES},
    }
    (project / "branches.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return project


def _backport(project: Path, *args: str) -> int:
    """Run the backport command line in this process; returns its exit code."""
    argv = ["--config", str(project / "branches.yaml"), "--quiet", *args]
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            cli.main(argv, prog_name="backport", standalone_mode=False)
        except SystemExit as exc:
            return int(exc.code or 0)
        except Exception:  # noqa: BLE001 - a tool error is a result of the replay
            return 99
    return 0


def _records(project: Path, name: str) -> dict[str, dict]:
    path = project / ".backport" / "runs" / name / "journal.json"
    if not path.exists():
        return {}
    return dict(json.loads(path.read_text())["branches"])


def _judge(case: Case, mirror: Path, cache: Path, records: dict[str, dict],
           files: dict[str, list[str]]) -> list[Pair]:
    pairs = []
    for branch in BRANCHES:
        rec = records.get(branch) or {}
        pair = Pair(case.name, branch, status=str(rec.get("status") or "missing"),
                    shared=case.landed[branch] == case.landed[SOURCE])
        source = rec.get("series_source") or {}
        pair.source = "hand" if rec.get("manual") else ("propagated" if source else "original")
        chain = []
        while source:
            chain.append(str(source.get("branch")))
            source = source.get("via") or {}
        if chain:
            pair.source += f" ({' <- '.join(chain)})"
        pair.tried = list(rec.get("tried_sources") or [])
        pair.merged = bool(rec.get("merged_files"))
        pair.loose = bool(rec.get("loose_files"))
        pair.conflicts = list(rec.get("conflicts") or [])
        commit = rec.get("commit")
        if not commit:
            pair.outcome = "not-applied"
        else:
            landed = case.landed[branch]
            pair.differing = [f for f in files[branch]
                              if _blob(cache, commit, f) != _blob(mirror, landed, f)]
            pair.outcome = "different" if pair.differing else "identical"
        pairs.append(pair)
    return pairs


def _resolve_like_upstream(mirror: Path, worktree: Path, landed: str, files: list[str]) -> None:
    """The simulated maintainer: every file as it really merged on this branch, staged."""
    for path in files:
        target = worktree / path
        blob = _blob(mirror, landed, path)
        if blob is None:
            if target.exists():
                _git(["rm", "--quiet", "--sparse", "-f", "--", path], cwd=worktree, check=False)
            continue
        data = subprocess.run(["git", f"--git-dir={mirror}", "cat-file", "blob", blob],
                              capture_output=True, check=True).stdout
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        _git(["add", "--sparse", "--", path], cwd=worktree)


def replay_case(case: Case, mirror: Path, work: Path, push: bool) -> dict:
    """Both phases of one case; returns {"automatic": [...], "resolved": [...], "seconds": s}."""
    started = time.monotonic()
    root = work / case.name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    pre = {b: _git(["rev-parse", f"{case.landed[b]}^"], git_dir=mirror).strip() for b in BRANCHES}
    upstream = _borrowing_repo(root / "upstream.git", mirror, pre)
    fork = _borrowing_repo(root / "fork.git", mirror, pre)
    project = _project(root, upstream, fork)
    os.environ["BACKPORT_CACHE"] = str(root / "cache")
    for key, value in (("GIT_COMMITTER_NAME", IDENTITY[0]), ("GIT_COMMITTER_EMAIL", IDENTITY[1])):
        os.environ.setdefault(key, value)
    source = case.landed[SOURCE]
    source_files = _touched(mirror, source)
    files = {b: list(dict.fromkeys(source_files + _touched(mirror, case.landed[b])))
             for b in BRANCHES}
    apply_args = ["apply", "--api", case.name, "--skip-tests", "--jobs", "1"]
    if not push:
        apply_args.append("--no-push")
    result: dict = {"case": case.name, "subject": case.subject}
    code = _backport(project, "new", case.name, "--from", source, "--repo", str(mirror),
                     "--api", API, "--issue", str(ISSUE))
    if code != 0:
        result["error"] = f"backport new exited {code}"
        return result
    _backport(project, *apply_args)
    caches = [p for p in (root / "cache").iterdir() if (p / "objects").is_dir()]
    cache = caches[0] if caches else root / "cache"
    records = _records(project, case.name)
    result["automatic"] = [asdict(p) for p in _judge(case, mirror, cache, records, files)]
    conflicted = [b for b in BRANCHES if records.get(b, {}).get("status") == "conflict"]
    if conflicted:
        newest = newest_first(conflicted)[0]
        worktree = Path(records[newest]["worktree"])
        _resolve_like_upstream(mirror, worktree, case.landed[newest], files[newest])
        cont = ["continue", "--api", case.name, "--branch", newest, "--skip-tests"]
        _backport(project, *cont, *([] if push else ["--no-push"]))
        _backport(project, *apply_args)
        records = _records(project, case.name)
    result["resolved"] = [asdict(p) for p in _judge(case, mirror, cache, records, files)]
    result["resolved_on"] = newest_first(conflicted)[0] if conflicted else None
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def _worker(args: tuple[Case, Path, Path, bool, bool]) -> dict:
    case, mirror, work, push, keep = args
    try:
        return replay_case(case, mirror, work, push)
    finally:
        if not keep:
            shutil.rmtree(work / case.name, ignore_errors=True)


# -- report -----------------------------------------------------------------------------------
def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def summary(results: list[dict]) -> str:
    """The Markdown tables: automatic, then with one simulated resolution per conflicted case."""
    lines = []
    for phase, title in (("automatic", "Automatic (`backport new` + `backport apply`)"),
                         ("resolved", "After one simulated resolution per conflicted case")):
        pairs = [p for r in results for p in r.get(phase, [])]
        lines += [f"### {title}", "",
                  "| branch | source | pairs | identical | applied but different | not applied |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for branch in (*newest_first(BRANCHES), "all"):
            mine = [p for p in pairs if branch in ("all", p["branch"])]
            kinds = Counter(p["source"].split(" ")[0] for p in mine)
            for source in ("all", *sorted(kinds)) if phase == "resolved" else ("all",):
                rows = [p for p in mine if source in ("all", p["source"].split(" ")[0])]
                count = Counter(p["outcome"] for p in rows)
                lines.append(f"| {branch} | {source} | {len(rows)} | {count['identical']} "
                             f"({_pct(count['identical'], len(rows))}) | {count['different']} | "
                             f"{count['not-applied']} |")
        shared = [p for p in pairs if p["shared"]]
        own = [p for p in pairs if not p["shared"]]
        same = sum(p["outcome"] == "identical" for p in own)
        lines += ["", f"{len(shared)} of the {len(pairs)} pairs apply the source commit to its own "
                  f"parent (it landed on the branch before the branch split off master); "
                  f"{sum(p['outcome'] == 'identical' for p in shared)} of them identical. "
                  f"The other {len(own)} pairs: {same} identical ({_pct(same, len(own))}).", ""]
    carried = [p for r in results for p in r.get("resolved", [])
               if p["source"].startswith("propagated")]
    if carried:
        lines += ["### Pairs applied from a carried series", "",
                  "| case | branch | from | how | outcome |", "| --- | --- | --- | --- | --- |"]
        for p in carried:
            how = ("context lines ignored" if p.get("loose") else
                   "3-way merge (by line or by entry)" if p["merged"] else "as is")
            lines.append(f"| {p['case']} | {p['branch']} | {p['source'].split(' ', 1)[1]} | "
                         f"{how} | {p['outcome']} |")
        lines.append("")
    still = [p for r in results for p in r.get("resolved", []) if p["outcome"] != "identical"]
    if still:
        lines += ["### Pairs not identical after the simulated resolution", "",
                  "| case | branch | status | source | tried | differing files |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for p in still:
            lines.append(f"| {p['case']} | {p['branch']} | {p['status']} | {p['source']} | "
                         f"{', '.join(p['tried']) or '-'} | {', '.join(p['differing']) or '-'} |")
    errors = [r for r in results if r.get("error")]
    if errors:
        lines += ["", "Cases not replayed: " + "; ".join(f"{r['case']}: {r['error']}"
                                                         for r in errors)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Replay the corpus (or its first ``--limit`` cases) and print the summary tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=os.environ.get("BACKPORT_REAL_REPO"),
                        help="git directory of the Ascend/pytorch mirror "
                             "(default: $BACKPORT_REAL_REPO)")
    parser.add_argument("--since", default=SINCE, help=f"first landing date (default {SINCE})")
    parser.add_argument("--limit", type=int, default=0, help="replay only the first N cases")
    parser.add_argument("--case", action="append", default=[], help="replay only this case id")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="cases replayed at once")
    parser.add_argument("--no-push", action="store_true",
                        help="stop each apply before the fork push and PR (faster)")
    parser.add_argument("--work", type=Path, help="scratch directory to keep (default: temp)")
    parser.add_argument("--json", type=Path, help="also write every pair's result here")
    parser.add_argument("--list", action="store_true", help="only list the corpus")
    args = parser.parse_args(argv)
    if args.mirror is None:
        parser.error("give --mirror or set BACKPORT_REAL_REPO")
    mirror = Path(args.mirror).resolve()
    if not (mirror / "objects").is_dir():
        parser.error(f"{mirror} is not a git directory")
    cases = select_cases(mirror, args.since)
    if args.case:
        cases = [c for c in cases if c.name in args.case]
    if args.limit:
        cases = cases[:args.limit]
    print(f"corpus: {len(cases)} cases, {len(cases) * len(BRANCHES)} pairs", flush=True)
    if args.list:
        for case in cases:
            print(case.name, " ".join(case.landed[b][:9] for b in BRANCHES), case.subject)
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        work = (args.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        jobs = [(case, mirror, work, not args.no_push, args.work is not None) for case in cases]
        results = []
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for n, result in enumerate(pool.map(_worker, jobs), 1):
                results.append(result)
                auto = Counter(p["outcome"] for p in result.get("automatic", []))
                print(f"[{n}/{len(jobs)}] {result['case']} {result.get('seconds', '-')}s "
                      f"{dict(auto)} {result.get('error', '')}", flush=True)
    print(f"\nreplayed {len(results)} cases in {time.monotonic() - started:.0f}s\n")
    text = summary(results)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
