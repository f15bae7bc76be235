"""Measure what `backport apply` costs GitCode: requests per PR, and a batch's wall time under
GitCode's documented limit of 50 requests a minute.

Runs offline against the GitCode stand-in (`tests/helpers/fake_gitcode.py`) on 127.0.0.1, which
answers 429 to the 51st request in any window, like the service. The demo sandbox (an upstream
with v2.7.1, v2.11.0, v2.12.0, master) gets N patch sets of one commit each; `apply --all
--skip-tests` opens their 4 x N PRs. The minute is scaled down by ``--scale`` on both sides
(client limiter and stand-in) so the batch does not take real minutes; the report gives the wall
time measured, and the time the same pacing takes at the real minute.

    .venv/bin/python bench/gitcode_budget.py                 # 20 sets, minute scaled by 10
    .venv/bin/python bench/gitcode_budget.py --scale 1       # the real minute (~10 min)
    .venv/bin/python bench/gitcode_budget.py --sets 1 --comment compile
    .venv/bin/python bench/gitcode_budget.py --sets 4 --processes 2 --per-minute 10

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

from batch_patches import make_patch_sets  # noqa: E402

from backport.demo.sandbox import build_sandbox  # noqa: E402
from backport.forge.http import pacing_seconds  # noqa: E402
from tests.helpers.fake_gitcode import FakeGitCode, git_branch_checker  # noqa: E402

TOKEN = "bench-token"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(sets: int, scale: float, comment: str | None, work: Path, *, per_minute: int = 50,
        processes: int = 1, separate_caches: bool = False) -> dict:
    sandbox = build_sandbox(work / "sb", ROOT / "patches" / "put_metric", sys.executable)
    shutil.rmtree(sandbox.project / "patches" / "put_metric")  # only the N sets made here
    names = make_patch_sets(str(sandbox.upstream), work / "scratch", sandbox.project / "patches",
                            sets)
    window = 60.0 / scale
    server = FakeGitCode(tokens={TOKEN}, upstream="Ascend/pytorch", fork="lgxxx/pytorch",
                         branch_exists=git_branch_checker({"lgxxx/pytorch": sandbox.fork}),
                         per_minute=per_minute, rate_window=window)
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
        log(f"apply --skip-tests in {processes} process(es): {sets} set(s) x 4 branches, "
            f"{per_minute} requests per {window:g} s")
        shares = [names[i::processes] for i in range(processes)]
        started = time.monotonic()
        procs = [subprocess.Popen(
            [sys.executable, "-m", "backport", "apply", "--skip-tests",
             *[arg for name in share for arg in ("--api", name)]],
            cwd=sandbox.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**env, "BACKPORT_CACHE": str(work / f"cache-{index}")} if separate_caches
            else env) for index, share in enumerate(shares) if share]
        outputs = [proc.communicate() for proc in procs]
        wall = time.monotonic() - started
        for proc, (_, err) in zip(procs, outputs, strict=True):
            if proc.returncode != 0:
                raise SystemExit(f"apply exited {proc.returncode}:\n{err[-3000:]}")
        waits = [line for _, err in outputs for line in err.splitlines()
                 if line.startswith("[forge] rate limit:")]
        counts = server.counts()
        total = sum(counts.values())
        prs = len(server.open_prs())
        return {
            "sets": sets, "processes": len(procs), "per_minute": per_minute,
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
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitcode-budget-") as scratch:
        result = run(args.sets, args.scale, args.comment, Path(scratch),
                     per_minute=args.per_minute, processes=args.processes,
                     separate_caches=args.separate_caches)
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
