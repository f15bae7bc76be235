"""Benchmark `backport apply` against the naive script, on a repository of realistic size.

One run reports, side by side: the naive script (full clone, ``git am -3``, test; one branch
after another), ``backport apply`` cold and warm for the four put_metric branches, a batch of N
patch sets x 4 branches against one patch set, the cache's bytes against a full mirror clone, and
the tool's own peak RSS. Prints a Markdown table and writes ``<out>/results.json``.

    .venv/bin/python bench/run.py                      # synthetic upstream, 20k files
    .venv/bin/python bench/run.py --repo /srv/pytorch.git --python ~/envs/torch/bin/python
    BACKPORT_REAL_REPO=... .venv/bin/python bench/run.py --real --repeat 3   # real trees
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import platformdirs

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from batch_patches import make_patch_sets  # noqa: E402
from real_trees import build as build_real  # noqa: E402
from real_trees import real_repo  # noqa: E402
from synth_repo import build as build_synthetic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
ENVIRONMENTS = {"v2.7.1": "torch-2.7.1", "v2.11.0": "torch-2.11.0", "v2.12.0": "torch-2.12.0",
                "master": "torch-2.12.0"}
PUT_METRIC = ROOT / "patches" / "put_metric"
TEST_PATH = "test/distributed/elastic/metrics/test_metrics_api.py"
RSS_EXEC = Path(__file__).resolve().parent / "rss_exec.py"
# Issue 14: warm >= 4x with one shared environment (>= 3x with the three real ones), cold >= 3x,
# 20 sets x 4 branches <= 2x one set, peak RSS <= 150 MB; issue 7: cache <= 35 % of a mirror.
GOALS = {"warm_speedup": 4.0, "warm_speedup_real_envs": 3.0, "cold_speedup": 3.0,
         "cache_ratio": 0.35, "batch_ratio": 2.0, "rss_mb": 150.0}


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def git_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "LANG": "C", "LC_ALL": "C", "GIT_AUTHOR_NAME": "naive script",
           "GIT_AUTHOR_EMAIL": "naive@example.invalid", "GIT_COMMITTER_NAME": "naive script",
           "GIT_COMMITTER_EMAIL": "naive@example.invalid"}
    env.update(extra)
    return env


def git(args: list[str], cwd: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=git_env(), text=True,
                          capture_output=True, **kwargs)


def du_bytes(path: Path) -> int:
    """``du -sb``: apparent size of everything under ``path``."""
    out = subprocess.run(["du", "-sb", "--", str(path)], capture_output=True, text=True,
                         check=True, env=git_env())
    return int(out.stdout.split()[0])


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


# -- machine ---------------------------------------------------------------------------------
def machine(test_python: str) -> dict[str, Any]:
    """nproc, CPU model, RAM, load, Python and git versions."""
    cpu = "unknown"
    ram = 0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
    except OSError:
        pass
    test_py = subprocess.run([test_python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=False).stdout.strip()
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu,
        "ram_gb": round(ram / 2**30, 1),
        "loadavg_start": os.getloadavg()[0],
        "loadavg_start_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "os": platform.platform(),
        "python_tool": platform.python_version(),
        "python_tests": test_py,
        "git": git(["--version"], cwd=Path.cwd()).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }


# -- upstream --------------------------------------------------------------------------------
def describe_repo(path: Path) -> dict[str, Any]:
    files = git(["ls-tree", "-r", "--name-only", "master"], cwd=path, check=True).stdout
    commits = git(["rev-list", "--count", "--all"], cwd=path, check=True).stdout.strip()
    allow = git(["config", "--get", "uploadpack.allowFilter"], cwd=path).stdout.strip()
    return {"path": str(path), "bytes": du_bytes(path), "files_on_master": files.count("\n"),
            "commits": int(commits), "allow_filter": allow == "true"}


# -- naive script ----------------------------------------------------------------------------
def naive(upstream_url: str, work: Path, pythons: dict[str, str],
          patches: list[Path]) -> dict[str, Any]:
    """For each branch in turn: full clone, ``git am -3``, run the test."""
    work.mkdir(parents=True)
    started, cpu0 = time.monotonic(), children_cpu()
    branches = []
    for target in TARGETS:
        clone = work / target
        t0 = time.monotonic()
        git(["clone", "--quiet", "--branch", target, "--", upstream_url, str(clone)], cwd=work,
            check=True)
        t1 = time.monotonic()
        am = git(["am", "--quiet", "-3", "--", *map(str, patches)], cwd=clone)
        t2 = time.monotonic()
        test = subprocess.run([pythons[target], TEST_PATH, "-v"], cwd=clone, capture_output=True,
                              text=True, env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
                                              "PYTHONDONTWRITEBYTECODE": "1"}, check=False)
        t3 = time.monotonic()
        branches.append({"target": target, "clone_s": round(t1 - t0, 2),
                         "am_s": round(t2 - t1, 2), "test_s": round(t3 - t2, 2),
                         "am_ok": am.returncode == 0, "test_exit": test.returncode})
        log(f"naive {target}: clone {t1 - t0:.1f}s, am {t2 - t1:.1f}s, test {t3 - t2:.1f}s "
            f"(exit {test.returncode})")
    wall = time.monotonic() - started
    ok = all(b["am_ok"] and b["test_exit"] == 0 for b in branches)
    return {"wall_s": round(wall, 2), "cpu_s": round(children_cpu() - cpu0, 1), "ok": ok,
            "branches": branches,
            "checkout_bytes": du_bytes(work)}


# -- backport --------------------------------------------------------------------------------
def make_project(project: Path, upstream: str, fork: Path, pythons: dict[str, str],
                 patch_sets: list[Path], fork_kind: str) -> None:
    """branches.yaml (local forge, local upstream and fork) plus copies of the patch sets.

    ``fork_kind`` "clone": the fork starts as a bare clone of the upstream (hard links), as a
    GitCode fork does; "empty": an empty bare repository, so the first push sends all history.
    """
    project.mkdir(parents=True)
    if fork_kind == "clone":
        git(["clone", "--quiet", "--bare", "--", upstream, str(fork)], cwd=project.parent,
            check=True)
    else:
        git(["init", "--quiet", "--bare", "--", str(fork)], cwd=project.parent, check=True)
    # One interpreter for every branch: one shared environment; else the seed's three.
    env_of = ({t: "shared" for t in TARGETS} if len(set(pythons.values())) == 1
              else dict(ENVIRONMENTS))
    environments = {env_of[t]: {"python": pythons[t], "env": {"PYTHONDONTWRITEBYTECODE": "1"}}
                    for t in TARGETS}
    config = {"forge": "local", "upstream": "Ascend/pytorch", "fork": "lgxxx/pytorch",
              "fork_branch": "test-{slug}-{target}", "upstream_url": upstream,
              "fork_url": str(fork), "environments": environments,
              "branches": {t: {"env": env_of[t]} for t in TARGETS}}
    # JSON is YAML: no dependency needed here.
    (project / "branches.yaml").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for patch_set in patch_sets:
        shutil.copytree(patch_set, project / "patches" / patch_set.name)


def _poll_hwm(pid: int, peak: list[int], done: threading.Event) -> None:
    """Track VmHWM (peak RSS of that one process, children excluded) until it exits."""
    status = Path(f"/proc/{pid}/status")
    while not done.is_set():
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak[0] = max(peak[0], int(line.split()[1]))
        except (OSError, ValueError):
            return
        done.wait(0.05)


def _journal_entries(project: Path) -> list[dict[str, Any]]:
    """Every branch record of every patch set's journal in ``project``."""
    entries = []
    for journal in sorted((project / ".backport" / "runs").glob("*/journal.json")):
        doc = json.loads(journal.read_text(encoding="utf-8"))
        for record in (doc.get("branches") or {}).values():
            if isinstance(record, dict):
                entries.append(dict(record, patch_set=doc.get("patch_set")))
    return entries


def _copy_timestamped(stream: Any, sink: Any, started: float) -> None:
    for raw in iter(stream.readline, b""):
        sink.write(b"%7.2f " % (time.monotonic() - started) + raw)
    stream.close()


def run_backport(label: str, project: Path, cache: Path, argv: list[str], logs: Path,
                 tool_python: str) -> dict[str, Any]:
    """One ``backport -v apply`` under the RSS wrapper; wall time, statuses, peak RSS.

    The output goes to ``<logs>/<label>.log``, every line prefixed with seconds since start.
    """
    rss_file = logs / f"{label}.rss"
    env = {**os.environ, "BACKPORT_CACHE": str(cache), "BENCH_RSS_FILE": str(rss_file),
           "LANG": "C", "LC_ALL": "C", "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "160"}
    cmd = [tool_python, str(RSS_EXEC), "-v", "--config", str(project / "branches.yaml"),
           "apply", *argv]
    log_path = logs / f"{label}.log"
    with log_path.open("wb") as sink:
        started, cpu0 = time.monotonic(), children_cpu()
        proc = subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        peak, done = [0], threading.Event()
        poller = threading.Thread(target=_poll_hwm, args=(proc.pid, peak, done), daemon=True)
        poller.start()
        _copy_timestamped(proc.stdout, sink, started)
        code = proc.wait()
        wall = time.monotonic() - started
        cpu = children_cpu() - cpu0
        done.set()
        poller.join()
    try:
        rss_kib = int(rss_file.read_text().strip())
    except (OSError, ValueError):
        rss_kib = peak[0]
    statuses: dict[str, int] = {}
    runners: dict[str, int] = {}
    test_s = 0.0
    for entry in _journal_entries(project):
        statuses[entry.get("status", "?")] = statuses.get(entry.get("status", "?"), 0) + 1
        test = entry.get("test") or {}
        for run in test.get("runs") or []:
            runners[run.get("runner", "?")] = runners.get(run.get("runner", "?"), 0) + 1
            test_s += float(run.get("duration") or 0)
    result = {"label": label, "argv": argv, "wall_s": round(wall, 2), "cpu_s": round(cpu, 1),
              "exit": code,
              "ok": code == 0 and set(statuses) == {"done"}, "statuses": statuses,
              "runners": runners, "test_seconds_sum": round(test_s, 2),
              "peak_rss_mb": round(rss_kib * 1024 / 1e6, 1),
              "peak_rss_polled_mb": round(peak[0] * 1024 / 1e6, 1), "log": str(log_path)}
    log(f"{label}: {wall:.1f}s exit {code} {statuses} runners {runners} "
        f"rss {result['peak_rss_mb']} MB")
    return result


# -- report ----------------------------------------------------------------------------------
def children_cpu() -> float:
    """User + system CPU seconds of every finished child process so far (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b else float("nan")


def _cpu(run: dict[str, Any]) -> str:
    return f"{run['cpu_s']:.1f}" if "cpu_s" in run else ""


def _loads(m: dict[str, Any], when: str) -> str:
    values = m.get(f"loadavg_{when}_1_5_15") or [m.get(f"loadavg_{when}", 0.0)]
    return "/".join(f"{v:.1f}" for v in values)


def _envs_line(params: dict[str, Any]) -> str:
    if params.get("envs") == "real":
        return "the seed's three (" + ", ".join(
            f"{t}: {ENVIRONMENTS[t]}" for t in TARGETS) + ")"
    return "one shared environment for all four branches"


def markdown(results: dict[str, Any]) -> str:
    m, repo, r = results["machine"], results["repo"], results["runs"]
    built = f", built in {repo['build_s']:.0f}s" if "build_s" in repo else ""
    naive_s = r["naive"]["wall_s"] if "naive" in r else 0.0
    lines = [
        f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['ram_gb']} GB RAM, load (1/5/15 min) "
        f"{_loads(m, 'start')} at start / {_loads(m, 'end')} at end; {m['os']}; tool Python "
        f"{m['python_tool']}, tests Python {m['python_tests']}; {m['git']}; {m['date']}.",
        f"Upstream: {repo['files_on_master']} files on master, {repo['commits']} commits, "
        f"{mb(repo['bytes'])} on disk ({repo['origin']}"
        f"{built}); "
        f"uploadpack.allowFilter={'true' if repo['allow_filter'] else 'false'}.",
        f"Test environments: {_envs_line(results['params'])}. Wall times are medians of "
        f"{results['params'].get('repeat', 1)} run(s); every run's time is listed below.",
        "",
        "| scenario | branches x sets | wall s | naive / this | this / one set | CPU s | statuses | tests ran via | tool peak RSS |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: |",
    ]
    if "naive" in r:
        naive_ok = "ok" if r["naive"]["ok"] else "FAILED"
        lines.append(f"| naive script (full clone, am -3, test; sequential) | 4 x 1 | "
                     f"{naive_s:.1f} | 1.00 | | {_cpu(r['naive'])} | {naive_ok} | plain python | |")
    if "naive" in r:
        parts = {k: sum(b[k] for b in r["naive"]["branches"]) for k in ("clone_s", "am_s", "test_s")}
        naive_note = (f"Naive script split: clone {parts['clone_s']:.1f}s, am {parts['am_s']:.1f}s, "
                      f"test {parts['test_s']:.1f}s.")
    else:
        naive_note = ""
    rows = [("put_metric_cold", "backport apply --api put_metric, cold cache", "4 x 1", None),
            ("put_metric_warm", "backport apply --api put_metric --force, warm", "4 x 1", None),
            ("single_cold", "backport apply --api bench_01, cold cache", "4 x 1", None),
            ("single_warm", "backport apply --api bench_01 --force, warm", "4 x 1", None),
            ("batch_cold", f"backport apply --all ({results['params']['batch']} sets), cold",
             f"4 x {results['params']['batch']}", "single_cold"),
            ("batch_warm", f"backport apply --all --force ({results['params']['batch']} sets), warm",
             f"4 x {results['params']['batch']}", "single_warm")]
    for key, title, shape, per in rows:
        run = r.get(key)
        if not run:
            continue
        per_set = f"{ratio(run['wall_s'], r[per]['wall_s']):.2f}" if per and per in r else ""
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(run["statuses"].items())) or \
            f"exit {run['exit']}"
        runners = ", ".join(f"{k} {v}" for k, v in sorted(run["runners"].items()))
        lines.append(f"| {title} | {shape} | {run['wall_s']:.1f} | "
                     f"{ratio(naive_s, run['wall_s']) if naive_s else float('nan'):.2f} | {per_set} | "
                     f"{_cpu(run)} | {statuses} | {runners} | "
                     f"{run['peak_rss_mb']:.0f} MB |")
    if naive_note:
        lines += ["", naive_note]
    walls = [f"{key} {', '.join(f'{w:.1f}' for w in run['walls_s'])}"
             for key, run in r.items() if run.get("walls_s")]
    if walls:
        lines += ["", "Every run (s): " + "; ".join(walls) + "."]
    b = results["bytes"]
    lines += ["", "| bytes | size | share of mirror |", "| --- | ---: | ---: |",
              f"| upstream `git clone --mirror` ({b['mirror_s']:.1f}s) | {mb(b['mirror'])} | 100% |",
              f"| backport cache after the cold 4-branch run | {mb(b['cache_after_cold'])} | "
              f"{100 * b['cache_ratio']:.1f}% |",
              f"| - of which objects/ | {mb(b.get('cache_objects', 0))} | "
              f"{100 * b.get('cache_objects', 0) / b['mirror']:.1f}% |",
              f"| - of which worktrees/ (per-worktree index files) | "
              f"{mb(b.get('cache_worktree_meta', 0))} | "
              f"{100 * b.get('cache_worktree_meta', 0) / b['mirror']:.1f}% |",
              f"| backport worktrees (4 sparse checkouts) | {mb(b['worktrees_after_cold'])} | |",
              f"| naive script's 4 full clones | {mb(b['naive_clones'])} | "
              f"{100 * b['naive_clones'] / b['mirror']:.0f}% |"]
    g = results["goals"]
    lines += ["", "| goal (issues 7, 14) | target | measured | met |", "| --- | --- | ---: | --- |"]
    for row in g:
        met = row["met"] if isinstance(row["met"], str) else ("yes" if row["met"] else "NO")
        lines.append(f"| {row['goal']} | {row['target']} | {row['measured']} | {met} |")
    return "\n".join(lines) + "\n"


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    r, b = results["runs"], results["bytes"]
    rows = []
    shared = results["params"].get("envs", "shared") == "shared"
    if "put_metric_warm" in r and "naive" in r:
        speed = ratio(r["naive"]["wall_s"], r["put_metric_warm"]["wall_s"])
        target = GOALS["warm_speedup"] if shared else GOALS["warm_speedup_real_envs"]
        rows.append({"goal": "warm 4-branch apply vs naive, "
                             + ("one shared environment" if shared else "three real environments"),
                     "target": f">= {target:g}x", "measured": f"{speed:.2f}x",
                     "met": speed >= target})
    if "put_metric_cold" in r and "naive" in r:
        speed = ratio(r["naive"]["wall_s"], r["put_metric_cold"]["wall_s"])
        rows.append({"goal": "cold 4-branch apply vs naive", "target": f">= {GOALS['cold_speedup']:g}x",
                     "measured": f"{speed:.2f}x", "met": speed >= GOALS["cold_speedup"]})
    if b.get("cache_ratio"):
        rows.append({"goal": "cold cache bytes vs mirror clone", "target": "<= 35%",
                     "measured": f"{100 * b['cache_ratio']:.1f}%",
                     "met": b["cache_ratio"] <= GOALS["cache_ratio"]})
    for kind in ("warm", "cold"):
        if f"batch_{kind}" in r and f"single_{kind}" in r:
            value = ratio(r[f"batch_{kind}"]["wall_s"], r[f"single_{kind}"]["wall_s"])
            rows.append({"goal": f"batch {results['params']['batch']}x4 vs one set ({kind})",
                         "target": f"<= {GOALS['batch_ratio']:g}x", "measured": f"{value:.2f}x",
                         "met": value <= GOALS["batch_ratio"]})
    peaks = [run["peak_rss_mb"] for key, run in r.items() if key != "naive"]
    if peaks:
        rows.append({"goal": "tool's own peak RSS (max over runs)", "target": "<= 150 MB",
                     "measured": f"{max(peaks):.0f} MB", "met": max(peaks) <= GOALS["rss_mb"]})
    return rows


# -- main ------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    default_python = os.environ.get("BACKPORT_TEST_PYTHON") or str(
        ROOT / ".ci" / "venvs" / "torch-2.13.0" / "bin" / "python")
    venv_python = ROOT / ".venv" / "bin" / "python"
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--python", default=default_python,
                        help="interpreter with torch for the tests (default: $BACKPORT_TEST_PYTHON "
                             "or .ci/venvs/torch-2.13.0/bin/python)")
    parser.add_argument("--tool-python", default=str(venv_python if venv_python.exists()
                                                     else sys.executable),
                        help="interpreter that has backport installed (default: .venv/bin/python)")
    parser.add_argument("--real", action="store_true",
                        help="real trees: the four put_metric pre-states of $BACKPORT_REAL_REPO "
                             "as single-commit branches (bench/real_trees.py)")
    parser.add_argument("--envs", choices=["auto", "shared", "real"], default="auto",
                        help="shared: --python for every branch; real: the seed's three "
                             "environments (torch-2.7.1, torch-2.11.0, torch-2.12.0) under "
                             "$BACKPORT_ENVS or the per-user folder; auto: real when all three "
                             "exist")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run the naive script and each backport run N times; report medians")
    parser.add_argument("--repo", type=Path, default=None,
                        help="an existing bare repository with branches v2.7.1 v2.11.0 v2.12.0 "
                             "master instead of the synthetic one")
    parser.add_argument("--files", type=int, default=20000, help="synthetic repo: files")
    parser.add_argument("--commits", type=int, default=4000, help="synthetic repo: commits on master")
    parser.add_argument("--batch", type=int, default=20, help="patch sets in the batch")
    parser.add_argument("--jobs", type=int, default=0, help="backport --jobs (0: its default)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--work", type=Path, default=None,
                        help="scratch folder (default: a new temp folder, removed at the end)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--fork", choices=["clone", "empty"], default="clone",
                        help="the fork starts as a clone of the upstream (default, as on GitCode) "
                             "or empty (the first push then sends the whole history)")
    parser.add_argument("--skip", action="append", default=[],
                        choices=["naive", "put_metric", "batch"], help="leave a part out")
    return parser.parse_args(argv)


def cache_bytes(into: dict[str, Any], cache: Path, project: Path) -> None:
    """Sizes of the cache (and its parts) and of the worktrees right after a cold run."""
    into["cache_after_cold"] = du_bytes(cache)
    cache_repo = next(p for p in cache.iterdir() if (p / "objects").is_dir())
    into["cache_objects"] = du_bytes(cache_repo / "objects")
    meta = cache_repo / "worktrees"
    into["cache_worktree_meta"] = du_bytes(meta) if meta.exists() else 0
    into["cache_ratio"] = round(into["cache_after_cold"] / into["mirror"], 4)
    worktrees = project / ".backport" / "worktrees"
    into["worktrees_after_cold"] = du_bytes(worktrees) if worktrees.exists() else 0
    blobless = git(["config", "--get", "remote.upstream.partialclonefilter"],
                   cwd=cache_repo).stdout.strip()
    into["cache_filter"] = blobless or "none"


def envs_folder() -> Path:
    """Where ``backport env setup`` puts environments (``$BACKPORT_ENVS`` or per-user data)."""
    value = os.environ.get("BACKPORT_ENVS")
    return Path(value).expanduser() if value else Path(
        platformdirs.user_data_dir("backport")) / "envs"


def branch_pythons(choice: str, shared: str) -> dict[str, str]:
    """The test interpreter of each target branch; SystemExit when ``real`` ones are missing."""
    real = {t: str(envs_folder() / name / "bin" / "python") for t, name in ENVIRONMENTS.items()}
    have = all(Path(p).exists() for p in real.values())
    if choice == "real" and not have:
        missing = sorted({n for t, n in ENVIRONMENTS.items() if not Path(real[t]).exists()})
        raise SystemExit(f"error: --envs real: no environment {', '.join(missing)} under "
                         f"{envs_folder()} (run `backport env setup`)")
    if choice == "real" or (choice == "auto" and have):
        return real
    return {t: shared for t in TARGETS}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median wall time (the lower one of an even count), with every wall."""
    ordered = sorted(runs, key=lambda run: run["wall_s"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["walls_s"] = [run["wall_s"] for run in runs]
    chosen["ok"] = all(run["ok"] for run in runs)
    return chosen


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    python = str(Path(args.python).expanduser())
    if not Path(python).exists():
        print(f"error: test interpreter {python} does not exist; pass --python or set "
              "BACKPORT_TEST_PYTHON", file=sys.stderr)
        return 2
    source = real_repo() if args.real else None
    pythons = branch_pythons(args.envs, python)
    repeat = max(args.repeat, 1)
    out = args.out.absolute()
    logs = out / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="backport-bench-", dir=args.work))
    log(f"scratch folder {work}")
    results: dict[str, Any] = {"machine": machine(python), "runs": {}, "bytes": {},
                               "params": {"files": args.files, "commits": args.commits,
                                          "batch": args.batch, "jobs": args.jobs,
                                          "python": python, "pythons": pythons,
                                          "repeat": repeat,
                                          "envs": "shared" if len(set(pythons.values())) == 1
                                          else "real"}}
    extra = ["--jobs", str(args.jobs)] if args.jobs else []
    try:
        # 1. the upstream
        if source is not None:
            log("building the real-trees upstream (four single-commit pre-states)")
            real = build_real(work / "upstream.git", source)
            upstream = work / "upstream.git"
            repo = describe_repo(upstream) | {
                "origin": "real Ascend/pytorch trees, one commit per branch",
                "build_s": real["seconds"], "placeholders": real["placeholders"]}
        elif args.repo:
            upstream = args.repo.expanduser().absolute()
            repo = describe_repo(upstream) | {"origin": "given"}
        else:
            log(f"building a synthetic upstream: {args.files} files, {args.commits} commits")
            stats = build_synthetic(work / "upstream.git", args.files, args.commits)
            upstream = stats.path
            t0 = time.monotonic()
            git(["repack", "-a", "-d", "-f", "-q", "--window=10"], cwd=upstream, check=True)
            repo = describe_repo(upstream) | {
                "origin": "synthetic, git fast-import + repack -adf",
                "build_s": round(stats.seconds + time.monotonic() - t0, 1)}
        results["repo"] = repo
        url = "file://" + str(upstream)
        log(f"upstream: {repo['files_on_master']} files, {repo['commits']} commits, "
            f"{mb(repo['bytes'])}")
        patches = sorted(PUT_METRIC.glob("*.patch"))

        # 5a. the full mirror clone, for the bytes comparison
        t0 = time.monotonic()
        git(["clone", "--quiet", "--mirror", "--", url, str(work / "mirror.git")], cwd=work,
            check=True)
        results["bytes"]["mirror_s"] = round(time.monotonic() - t0, 2)
        results["bytes"]["mirror"] = du_bytes(work / "mirror.git")
        shutil.rmtree(work / "mirror.git")

        # 2. the naive script
        if "naive" not in args.skip:
            naive_runs = []
            for n in range(repeat):
                log(f"naive script ({n + 1}/{repeat})")
                naive_runs.append(naive(url, work / "naive", pythons, patches))
                shutil.rmtree(work / "naive")
            results["runs"]["naive"] = median_run(naive_runs)
            results["bytes"]["naive_clones"] = results["runs"]["naive"]["checkout_bytes"]

        # 3. backport apply --api put_metric, cold then warm
        if "put_metric" not in args.skip:
            colds, warms = [], []
            for n in range(repeat):
                base = work / f"pm{n}"
                project, cache = base / "project", base / "cache"
                make_project(project, str(upstream), base / "fork.git", pythons, [PUT_METRIC],
                             args.fork)
                colds.append(run_backport(f"put_metric_cold_{n + 1}", project, cache,
                                          ["--api", "put_metric", *extra], logs,
                                          args.tool_python))
                if n == 0:
                    cache_bytes(results["bytes"], cache, project)
                warms.append(run_backport(f"put_metric_warm_{n + 1}", project, cache,
                                          ["--api", "put_metric", "--force", *extra], logs,
                                          args.tool_python))
                shutil.rmtree(base)
            results["runs"]["put_metric_cold"] = median_run(colds)
            results["runs"]["put_metric_warm"] = median_run(warms)

        # 4. batch: N patch sets x 4 branches against one of them alone
        if "batch" not in args.skip:
            log(f"making {args.batch} patch sets")
            sets_dir = work / "sets"
            sets_dir.mkdir()
            names = make_patch_sets(url, work / "scratch", sets_dir, args.batch)
            shutil.rmtree(work / "scratch")
            runs = results["runs"]
            found: dict[str, list[dict[str, Any]]] = {}
            for n in range(repeat):
                one, many = work / f"one{n}", work / f"many{n}"
                make_project(one / "project", str(upstream), one / "fork.git", pythons,
                             [sets_dir / names[0]], args.fork)
                make_project(many / "project", str(upstream), many / "fork.git", pythons,
                             [sets_dir / name for name in names], args.fork)
                for key, where, api in (("single_cold", one, ["--api", names[0]]),
                                        ("single_warm", one, ["--api", names[0], "--force"]),
                                        ("batch_cold", many, ["--all"]),
                                        ("batch_warm", many, ["--all", "--force"])):
                    found.setdefault(key, []).append(run_backport(
                        f"{key}_{n + 1}", where / "project", where / "cache", [*api, *extra],
                        logs, args.tool_python))
                shutil.rmtree(one)
                shutil.rmtree(many)
            for key, all_runs in found.items():
                runs[key] = median_run(all_runs)
    finally:
        results["machine"]["loadavg_end"] = os.getloadavg()[0]
        results["machine"]["loadavg_end_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
        out.mkdir(parents=True, exist_ok=True)
        if "repo" in results and "mirror" in results["bytes"]:
            results["bytes"].setdefault("naive_clones", 0)
            results["bytes"].setdefault("cache_after_cold", 0)
            results["bytes"].setdefault("worktrees_after_cold", 0)
            results["bytes"].setdefault("cache_ratio", 0.0)
            results["goals"] = goals(results)
            table = markdown(results)
            results["markdown"] = table
            print(table)
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    failed = [k for k, v in results["runs"].items() if not v["ok"]]
    if failed:
        log(f"runs that did not fully succeed: {', '.join(failed)} (see {logs})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
