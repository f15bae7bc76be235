"""Measure what `backport apply` costs GitCode: requests per PR, and a batch's wall time under
GitCode's documented limit of 50 requests a minute.

Runs offline against the GitCode stand-in (`tests/fakes/gitcode.py`) on 127.0.0.1, which
answers 429 to the 51st request in any window, like the service. The demo sandbox (an upstream
with v2.7.1, v2.11.0, v2.12.0, master) gets N patch sets of one commit each; `apply --all
--skip-tests` opens their 4 x N PRs. The minute is scaled down by ``--scale`` on both sides
(client limiter and stand-in) so the batch does not take real minutes; the report gives the wall
time measured, and the time the same pacing takes at the real minute.

    .venv/bin/python bench/gitcode_budget.py                 # 20 sets, minute scaled by 10
    .venv/bin/python bench/gitcode_budget.py --scale 1       # the real minute (~10 min)
    .venv/bin/python bench/gitcode_budget.py --sets 1 --comment compile
    .venv/bin/python bench/gitcode_budget.py --sets 4 --processes 2 --per-minute 10
    .venv/bin/python bench/gitcode_budget.py --sets 17 --from-pr   # 51 PRs from 17 merged PRs

With ``--processes 2`` the patch sets are split between two `apply` processes of one user (one
token) started together; they share the token's pace through the cache folder, so the stand-in,
counting both, should answer no 429 (with ``--separate-caches`` they share nothing, the
control that meets 429s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from batch_patches import TEST_TEMPLATE, make_patch_sets  # noqa: E402

from backport.demo.sandbox import Sandbox, build_sandbox  # noqa: E402
from backport.forge.pace import pacing_seconds  # noqa: E402
from tests.fakes.gitcode import FakeGitCode, git_branch_checker  # noqa: E402

TOKEN = "bench-token"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def land_source_prs(sandbox: Sandbox, server: FakeGitCode, scratch: Path, count: int) -> list[str]:
    """``count`` merged PRs into master, each squash-merged as GitCode does (a message naming
    ``!N``) with a test file of its own, no API in its body, one linked issue: the
    ``--from-pr`` arguments of the batch."""
    subprocess.run(["git", "clone", "--quiet", str(sandbox.upstream), str(scratch)], check=True)
    args = []
    for index in range(1, count + 1):
        nn = f"{index:02d}"
        pr = server.add_pr(head_repo="someone/pytorch", head=f"bench-{nn}", base="master",
                           title=f"test: add bench op_{nn} coverage", body="新增用例。\n",
                           state="merged", author="someone")
        path = f"test/bench/test_bench_{nn}.py"
        (scratch / "test" / "bench").mkdir(parents=True, exist_ok=True)
        (scratch / path).write_text(TEST_TEMPLATE.format(nn=nn, n=index + 2), encoding="utf-8")
        message = (f"test: add bench op_{nn} coverage\n\n!{pr.number} merge bench-{nn} into "
                   f"master\n\nSee merge request: Ascend/pytorch!{pr.number}")
        for step in (["add", path], ["-c", "user.name=bench", "-c",
                                     "user.email=bench@example.invalid", "commit", "--quiet",
                                     "-m", message]):
            subprocess.run(["git", *step], cwd=scratch, check=True)
        pr.files, pr.issues = [(None, path)], [9000 + index]
        pr.merged_at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        args += ["--from-pr", str(pr.number)]
    subprocess.run(["git", "push", "--quiet", "origin", "HEAD:master"], cwd=scratch, check=True)
    return args


def run(sets: int, scale: float, comment: str | None, work: Path, *, per_minute: int = 50,
        processes: int = 1, separate_caches: bool = False, from_pr: bool = False) -> dict:
    sandbox = build_sandbox(work / "sb", ROOT / "patches" / "put_metric", sys.executable)
    shutil.rmtree(sandbox.project / "patches" / "put_metric")  # only the N sets made here
    window = 60.0 / scale
    server = FakeGitCode(tokens={TOKEN}, upstream="Ascend/pytorch", fork="lgxxx/pytorch",
                         branch_exists=git_branch_checker({"lgxxx/pytorch": sandbox.fork}),
                         per_minute=per_minute, rate_window=window)
    if from_pr:  # each set made from a merged PR into master: three PRs each
        arguments = [land_source_prs(sandbox, server, work / "scratch", sets)]
    else:
        names = make_patch_sets(str(sandbox.upstream), work / "scratch",
                                sandbox.project / "patches", sets)
        shares = [names[i::processes] for i in range(processes)]
        arguments = [[arg for name in share for arg in ("--api", name)] for share in shares
                     if share]
    sources = len(server.requests)  # none: the PRs were seeded, not requested
    server.start()
    try:
        config = yaml.safe_load(sandbox.config.read_text(encoding="utf-8"))
        config["forge"], config["api_url"] = "gitcode", server.url
        if comment:
            config.setdefault("pr", {})["comment"] = comment
        sandbox.config.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        env = {**os.environ, "GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
               "BACKPORT_GITCODE_RATE": f"{per_minute}/{window:g},4000/{3600 / scale:g}",
               "BACKPORT_CACHE": str(work / "cache"), "NO_COLOR": "1"}
        log(f"apply --skip-tests in {len(arguments)} process(es): {sets} set(s)"
            f"{' made from PRs' if from_pr else ''}, {per_minute} requests per {window:g} s")
        started = time.monotonic()
        procs = [subprocess.Popen(
            [sys.executable, "-m", "backport", "apply", "--skip-tests", *args],
            cwd=sandbox.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**env, "BACKPORT_CACHE": str(work / f"cache-{index}")} if separate_caches
            else env) for index, args in enumerate(arguments)]
        outputs = [proc.communicate() for proc in procs]
        wall = time.monotonic() - started
        for proc, (_, err) in zip(procs, outputs, strict=True):
            if proc.returncode != 0:
                raise SystemExit(f"apply exited {proc.returncode}:\n{err[-3000:]}")
        waits = [line for _, err in outputs for line in err.splitlines()
                 if line.startswith("[forge] rate limit:")]
        counts = server.counts()
        total = sum(counts.values()) - sources
        prs = len([p for p in server.open_prs() if p.head_repo == "lgxxx/pytorch"])
        return {
            "sets": sets, "from_pr": from_pr, "processes": len(procs), "per_minute": per_minute,
            "prs": prs, "requests": total,
            "requests_per_pr": round(total / prs, 2) if prs else None,
            "requests_429": server.rate_limited, "wall_seconds": round(wall, 1),
            "window_seconds": window, "scale": scale,
            "pacing_seconds_at_real_minute": pacing_seconds(total, ((per_minute, 60.0),
                                                                    (4000, 3600.0))),
            "rate_wait_lines": len(waits), "first_wait_line": waits[0] if waits else None,
            "by_endpoint": dict(sorted(counts.items())),
        }
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=20)
    parser.add_argument("--scale", type=float, default=10.0,
                        help="how many times shorter than a minute the rate window is (1: real)")
    parser.add_argument("--comment", default=None, help="pr.comment to post on every PR")
    parser.add_argument("--per-minute", type=int, default=50,
                        help="the limit on both sides (GitCode documents 50 a minute)")
    parser.add_argument("--processes", type=int, default=1,
                        help="apply processes of one token started together (sets split)")
    parser.add_argument("--separate-caches", action="store_true",
                        help="give each process its own cache folder, so they share no pace "
                             "(the control: the stand-in then answers 429s)")
    parser.add_argument("--from-pr", action="store_true",
                        help="sets made from merged PRs into master (`apply --from-pr N …`, "
                             "three PRs each) instead of --api sets of four")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitcode-budget-") as scratch:
        result = run(args.sets, args.scale, args.comment, Path(scratch),
                     per_minute=args.per_minute, processes=args.processes,
                     separate_caches=args.separate_caches, from_pr=args.from_pr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gitcode_budget.json").write_text(json.dumps(result, indent=2) + "\n",
                                                  encoding="utf-8")
    print(f"| patch sets | processes | limit | PRs | requests | per PR | 429s "
          f"| wall time (window {result['window_seconds']:g} s) | pacing at the real minute |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print(f"| {result['sets']} | {result['processes']} | {result['per_minute']}/min "
          f"| {result['prs']} | {result['requests']} | "
          f"{result['requests_per_pr']} | {result['requests_429']} | {result['wall_seconds']} s | "
          f"{result['pacing_seconds_at_real_minute'] / 60:.0f} min |")
    print()
    for endpoint, count in result["by_endpoint"].items():
        print(f"- `{endpoint}`: {count}")


if __name__ == "__main__":
    main()
