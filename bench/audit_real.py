"""`backport audit` on the real Ascend/pytorch history: first run, re-run, and the goals.

    BACKPORT_REAL_REPO=/path/to/Ascend+pytorch.git .venv/bin/python bench/audit_real.py \
        [--since 2025-09-01] [--work DIR] [--keep] [--blobless]

A project whose upstream is the copy (``file://``), the embedded local forge (no open PR), the
shipped map's four branches and its ``audit: ignore``. The cache repository borrows the copy's
objects (``objects/info/alternates``, as a clone with ``--shared``), so a run measures the
audit, not a download; the copy stores no blob above 4 MiB, so a commit changing one has no
patch-id. ``--blobless``: the cache starts empty and the run fetches as a user's does (the
branches without blobs, then the blobs it reads) from the copy served over ``file://``.
Prints the times, the state counts, how many of the sync bot's and GitCode cherry-pick's
backports between mapped branches come out ``landed`` on their target, and a
sample of ``missing`` entries with what the history shows of each (same-title commit there?).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backport.audit import content  # noqa: E402
from backport.git.cache import cache_dir_name  # noqa: E402
from backport.git.squash_message import squash_head, squash_number  # noqa: E402
from backport.titles import title_key  # noqa: E402

BRANCHES = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
_SYNC = re.compile(r"^sync-pr(\d+)-")
_PICK = re.compile(r"^cherry-pick-mr-(\d+)-")


def served(work: Path, mirror: Path) -> str:
    """The copy as an upstream a blobless clone can use: a bare repository borrowing its
    objects, with its refs, serving filters and any object asked for (as GitCode does)."""
    bare = work / "served.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    (bare / "objects" / "info" / "alternates").write_text(f"{mirror / 'objects'}\n")
    shutil.copy(mirror / "packed-refs", bare / "packed-refs")
    shutil.copytree(mirror / "refs", bare / "refs", dirs_exist_ok=True)
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        subprocess.run(["git", "--git-dir", str(bare), "config", key, "true"], check=True)
    return f"file://{bare}"


def project(work: Path, mirror: Path, blobless: bool) -> tuple[Path, dict[str, str]]:
    shipped = yaml.safe_load((ROOT / "branches.yaml").read_text(encoding="utf-8"))
    url = served(work, mirror) if blobless else str(mirror)
    config = {"forge": "local", "upstream": "Ascend/pytorch", "fork": "bench/pytorch",
              "upstream_url": url, "fork_url": str(work / "fork.git"),
              "environments": {"py": {"python": sys.executable}},
              "branches": {b: {"env": "py"} for b in BRANCHES},
              "audit": shipped.get("audit", {})}
    folder = work / "project"
    (folder / "patches").mkdir(parents=True)
    (folder / "branches.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    cache = work / "cache"
    if blobless:  # an empty cache: the run's own blobless fetch, as a user meets it
        return folder, {"BACKPORT_CACHE": str(cache)}
    repo = cache / cache_dir_name(str(mirror))
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    (repo / "objects" / "info" / "alternates").write_text(f"{mirror / 'objects'}\n")
    # The copy's objects are all here: fetch without a filter (no lazy fetch of a blob the
    # copy lacks, which the copy could not serve anyway).
    subprocess.run(["git", "--git-dir", str(repo), "config", "backport.nofilter", "true"],
                   check=True)
    return folder, {"BACKPORT_CACHE": str(cache)}


def audit(folder: Path, env: dict[str, str], since: str) -> tuple[float, dict]:
    print(f"load average before a run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
          file=sys.stderr)
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "backport", "audit", "--since", since, "--json"],
                         cwd=folder, env={**os.environ, **env}, capture_output=True, text=True,
                         check=False)
    took = time.monotonic() - start
    if out.returncode != 0:
        raise SystemExit(f"audit failed ({out.returncode}): {out.stderr[-2000:]}")
    return took, json.loads(out.stdout)


def git(mirror: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(mirror), *args], capture_output=True,
                          text=True, check=True).stdout


def backports(mirror: Path, since: str) -> list[tuple[str, int, str, str]]:
    """(target, source PR, kind, commit) of each sync-bot / cherry-pick merge on a branch."""
    found = []
    for branch in BRANCHES:
        out = git(mirror, "log", "--first-parent", f"--since={since}", "--format=%H%x00%B%x1e",
                  branch, "--")
        for record in out.split("\x1e"):
            sha, _, message = record.strip("\n").partition("\x00")
            own = squash_number(message)
            head = squash_head(message, own) if own else ""
            for kind, rule in (("sync", _SYNC), ("cherry-pick", _PICK)):
                match = rule.match(head)
                if match:
                    found.append((branch, int(match.group(1)), kind, sha))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--since", default="2025-09-01")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--blobless", action="store_true",
                        help="start from an empty cache: a blobless fetch of the copy served "
                             "over file:// (it lacks a few blobs, as a promisor may)")
    parser.add_argument("--check", type=int, default=0,
                        help="also check this many missing cells by the written procedure")
    parser.add_argument("--report-only", action="store_true",
                        help="report on --work DIR's audit.json of an earlier run")
    args = parser.parse_args()
    mirror = Path(os.environ.get("BACKPORT_REAL_REPO") or "")
    if not (mirror / "HEAD").is_file():
        raise SystemExit("error: BACKPORT_REAL_REPO must name a bare copy of Ascend/pytorch")
    work = args.work or Path(tempfile.mkdtemp(prefix="audit-real-"))
    if args.report_only:
        data = json.loads((work / "audit.json").read_text(encoding="utf-8"))
        report(mirror, args, data, 0.0, 0.0)
        extra(mirror, args, data, work)
        return
    try:
        folder, env = project(work, mirror, args.blobless)
        first, data = audit(folder, env, args.since)
        again, data2 = audit(folder, env, args.since)
        assert data == data2, "the re-run's answer differs from the first"
        report(mirror, args, data, first, again)
        size = sum(f.stat().st_size for f in (work / "cache").rglob("*") if f.is_file())
        print(f"\ncache folder after the runs: {size / 2**20:.0f} MiB")
        (work / "audit.json").write_text(json.dumps(data), encoding="utf-8")
        extra(mirror, args, data, work)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def report(mirror: Path, args: argparse.Namespace, data: dict, first: float, again: float) -> None:
    changes = data["changes"]
    print(f"## backport audit --since {args.since} on {', '.join(data['branches'])}\n")
    print(f"changes: {len(changes)}; first run {first:.1f} s, re-run {again:.1f} s "
          f"({again / max(first, 1e-9):.0%} of the first)\n")
    counts = Counter((t, cell["state"]) for c in changes for t, cell in c["on"].items())
    states = sorted({s for _, s in counts})
    print("| on | " + " | ".join(states) + " |\n| --- |" + " --- |" * len(states))
    for branch in data["branches"]:
        print(f"| {branch} | " + " | ".join(str(counts[(branch, s)]) for s in states) + " |")
    by_pr = {(c["branch"], c["pr"]): c for c in changes if c["pr"] is not None}
    mapped = []
    for target, number, kind, sha in backports(mirror, args.since):
        sources = [c for (b, n), c in by_pr.items() if n == number and b != target]
        if sources:
            mapped.append((target, number, kind, sha, sources[0]))
    landed = [m for m in mapped if m[4]["on"].get(m[0], {}).get("state") == "landed"]
    print(f"\nsync-bot / cherry-pick backports between mapped branches since {args.since}: "
          f"{len(mapped)}; landed on their target: {len(landed)}")
    for target, number, kind, sha, source in mapped:
        cell = source["on"].get(target, {})
        if cell.get("state") != "landed":
            print(f"  not landed: !{number} ({source['branch']}) -> {target} by {kind} "
                  f"{sha[:9]}: {cell}")
    missing = [(c, t) for c in changes for t, cell in c["on"].items()
               if cell["state"] == "missing"]
    said = Counter(str(c["on"][t].get("applies")) for c, t in missing)
    print(f"\nmissing cells: applies true {said['True']}, false {said['False']}, "
          f"null {said['None']}")
    for change, target in missing:
        if change["on"][target].get("applies") is None:
            print(f"  null: {change['commit'][:9]} on {target}: {change['on'][target]['why']}")
    random.Random(38).shuffle(missing)
    print(f"\nsample of {args.sample} missing (of {len(missing)}):\n")
    print("| change | on | applies | same title there | title |\n| --- | --- | --- | --- | --- |")
    same = 0
    for change, target in missing[: args.sample]:
        title = change["title"]
        there = git(mirror, "log", "--first-parent", "--format=%h", "-F", f"--grep={title}",
                    "--since=2025-01-01", target, "--").split()
        same += bool(there)
        print(f"| {change['commit'][:9]} {change['branch']} !{change['pr']} | {target} | "
              f"{change['on'][target].get('applies')} | {' '.join(there[:3]) or 'no'} | "
              f"{title[:70].replace('|', '/')} |")
    print(f"\nsame-title commit on that branch: {same} of {min(args.sample, len(missing))}")


def extra(mirror: Path, args: argparse.Namespace, data: dict, work: Path) -> None:
    """Issue 48's measures: fixes, the from-pr lists, the tagged-title share, the checked
    sample."""
    changes = data["changes"]
    fixes = {c["fix"] for c in changes}
    print(f"\nfixes: {len(fixes)} (of {len(changes)} changes)")
    titles = {c["pr"]: title_key(c["title"], BRANCHES) for c in changes if c["pr"]}
    env = {**os.environ, "BACKPORT_CACHE": str(work / "cache")}
    for branch in BRANCHES:
        out = subprocess.run([sys.executable, "-m", "backport", "audit", "--since", args.since,
                              "--missing-on", branch, "--format", "from-pr"],
                             cwd=work / "project", env=env, capture_output=True, text=True,
                             check=True).stdout.split()
        numbers = [int(n) for n in out if n.isdigit()]
        said = Counter(titles.get(n, "") for n in numbers)
        print(f"--missing-on {branch} --format from-pr: {len(numbers)} lines, "
              f"{sum(k - 1 for k in said.values())} more than one per title")
    missing = [(c, t) for c in changes for t, cell in c["on"].items()
               if cell["state"] == "missing"]
    tagged = tagged_share(mirror, missing)
    print(f"\nmissing cells with a same-title-less-tags commit sharing a file on the target "
          f"(first-parent since 2025-01-01): {tagged} of {len(missing)} "
          f"({tagged / max(1, len(missing)):.1%})")
    if args.check:
        checked_sample(mirror, missing, args.check)


def _files(mirror: Path, commits: list[str]) -> dict[str, set[str]]:
    out = git(mirror, "-c", "core.quotepath=false", "log", "--no-walk=unsorted", "--format=%x1e%H",
              "--name-only", "--diff-merges=first-parent", *commits, "--")
    found = {}
    for record in out.split("\x1e")[1:]:
        lines = [x for x in record.split("\n") if x]
        if lines:
            found[lines[0]] = set(lines[1:])
    return found


def _target_titles(mirror: Path, target: str) -> dict[str, list[tuple[str, set[str]]]]:
    out = git(mirror, "-c", "core.quotepath=false", "log", "--first-parent", "--since=2025-01-01",
              "--format=%x1e%H%x00%s", "--name-only", "--diff-merges=first-parent", target, "--")
    found: dict[str, list[tuple[str, set[str]]]] = {}
    for record in out.split("\x1e")[1:]:
        head, _, names = record.partition("\n")
        sha, _, subject = head.partition("\x00")
        found.setdefault(title_key(subject, BRANCHES), []).append(
            (sha, {x for x in names.split("\n") if x}))
    return found


def tagged_share(mirror: Path, missing: list[tuple[dict, str]]) -> int:
    """How many missing cells have a first-parent commit on the target (since 2025-01-01)
    whose title, branch tags removed, is the change's, sharing a file with it."""
    files = _files(mirror, sorted({c["commit"] for c, _ in missing}))
    count = 0
    for target in BRANCHES:
        titled = _target_titles(mirror, target)
        for change, where in missing:
            if where != target:
                continue
            key = title_key(change["title"], BRANCHES)
            mine = files.get(change["commit"], set())
            count += any(sha != change["commit"] and mine & theirs
                         for sha, theirs in titled.get(key, []))
    return count


def _reverse_applies(mirror: Path, target: str, patch: str) -> bool:
    """Whether the change's patch applies in reverse on the target's head (a temporary index)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        subprocess.run(["git", "--git-dir", str(mirror), "read-tree", target], env=env,
                       check=True)
        out = subprocess.run(["git", "--git-dir", str(mirror), "apply", "--cached", "-R",
                              "--check"], input=patch.encode("utf-8", "surrogateescape"),
                             env=env, capture_output=True, check=False)
    return out.returncode == 0


def _hunks_there(mirror: Path, target: str, patch: str) -> tuple[int, int]:
    """(hunks whose post-image is in the target's file, of the same path or name; hunks)."""
    tree = set(git(mirror, "-c", "core.quotepath=false", "ls-tree", "-r", "--name-only",
                   target).split("\n"))
    by_name: dict[str, list[str]] = {}
    for path in tree:
        by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    there = total = 0
    for diff in content.parse(patch):
        if diff.binary or not diff.new:
            continue
        texts = [subprocess.run(["git", "--git-dir", str(mirror), "show", f"{target}:{path}"],
                                capture_output=True, check=False).stdout.decode(
                                    "utf-8", "surrogateescape")
                 for path in content.where(diff, tree, by_name)]
        for hunk in diff.hunks:
            total += 1
            one = content.FileDiff(diff.old, diff.new, False, [hunk])
            there += any(content.holds(one, text) for text in texts)
    return there, total


def checked_sample(mirror: Path, missing: list[tuple[dict, str]], size: int) -> None:
    """The written procedure of bench/README.md on ``size`` missing cells (seed 48): the
    patch in reverse on the target's head; each hunk's post-image in the target's file (its
    path, or its name elsewhere); a target commit (first-parent, since 2025-01-01) with a
    title like the change's (tags removed, difflib ratio >= 0.8) or naming its !N. A cell with
    one of those, or a quarter of its hunks there, is to be checked by hand."""
    sample = list(missing)
    random.Random(48).shuffle(sample)
    titled = {t: _target_titles(mirror, t) for t in BRANCHES}
    print(f"\nchecked sample of {size} missing cells (seed 48):\n")
    print("| change | on | applies | reverse applies | hunks there | like-titled / naming it | "
          "procedure says | title |\n| --- | --- | --- | --- | --- | --- | --- | --- |")
    verdicts: Counter[str] = Counter()
    for change, target in sample[:size]:
        sha = change["commit"]
        patch = git(mirror, "diff", "--no-color", "--no-renames", f"{sha}^1", sha, "--")
        back = _reverse_applies(mirror, target, patch)
        there, total = _hunks_there(mirror, target, patch)
        key = title_key(change["title"], BRANCHES)
        like = [s[:9] for k, found in titled[target].items()
                if difflib.SequenceMatcher(None, k, key).ratio() >= 0.8 for s, _ in found]
        named = (git(mirror, "log", "--first-parent", "--since=2025-01-01", "--format=%h", "-F",
                     f"--grep=!{change['pr']}", target, "--").split() if change["pr"] else [])
        if back or (total and there == total):
            verdict = "equivalent there"
        elif like or named or (total and 4 * there >= total):
            verdict = "check by hand"
        else:
            verdict = "missing"
        verdicts[verdict] += 1
        print(f"| {sha[:9]} {change['branch']} !{change['pr']} | {target} | "
              f"{change['on'][target].get('applies')} | {'yes' if back else 'no'} | "
              f"{there}/{total} | {' '.join(like[:2] + named[:2]) or '-'} | {verdict} | "
              f"{change['title'][:60].replace('|', '/')} |")
    print(f"\nprocedure: {dict(verdicts)}")


if __name__ == "__main__":
    main()
