"""Build a synthetic upstream bare repository of realistic size with ``git fast-import``.

The repository stands in for Ascend/pytorch: tens of thousands of source files spread over a deep
directory tree, a long history of small commits (new files, few-line edits), and the release
branches ``v2.7.1``, ``v2.11.0``, ``v2.12.0`` forked from ``master`` at different points, each
with commits of its own. Every branch carries the demo's
``test/distributed/elastic/metrics/test_metrics_api.py`` unchanged, so ``patches/put_metric``
applies everywhere.

Run standalone: ``python bench/synth_repo.py OUT.git --files 20000 --commits 4000``.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from array import array
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_PATH = "test/distributed/elastic/metrics/test_metrics_api.py"
TEST_CONTENT = ROOT / "backport" / "demo" / "files" / "test_metrics_api.py.txt"
# Release branches: (name, fork point as a fraction of master's history, own commits).
RELEASES = (("v2.7.1", 0.55, 60), ("v2.11.0", 0.80, 40), ("v2.12.0", 0.90, 25))
TOP_DIRS = ("torch_npu", "test", "third_party", "docs", "tools", "benchmarks", "codegen",
            "torchnpugen", "cmake", "ci", "examples", "scripts")
EXTENSIONS = (".py", ".py", ".py", ".cpp", ".cpp", ".h", ".yaml", ".md", ".txt", ".json")
AUTHORS = tuple((f"dev{n:02d}", f"dev{n:02d}@example.invalid") for n in range(40))
POOL_LINES = 60000  # distinct source lines files are sampled from (indices fit array 'H')
START_TIME = 1_546_300_800  # 2019-01-01
LF = b"\n"


def git_env() -> dict[str, str]:
    """The environment for every git call: C locale, no user config surprises."""
    return {**os.environ, "LANG": "C", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass
class SynthStats:
    """What was built."""

    path: Path
    files: int
    commits: int
    seconds: float
    branches: dict[str, str]


class _Text:
    """Deterministic, code-like text: files are lists of indices into a pool of lines."""

    def __init__(self, rng: random.Random) -> None:
        words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz_", k=rng.randint(2, 11)))
                 for _ in range(6000)]
        shapes = ("{i}def {a}_{b}(self, {c}, {d}={e}):", "{i}{a} = {b}.{c}({d}, {e})",
                  "{i}if {a} is not None and {b}:", "{i}return {a}({b}, {c}={d})",
                  "{i}# {a} {b} {c} {d} {e}", "{i}{a}.{b}[{c}] = {d} + {e}",
                  "{i}for {a} in {b}({c}):", "{i}self.{a} = {b}({c}, {d})",
                  "{i}auto {a} = at::{b}({c}, {d});", "{i}TORCH_CHECK({a}.{b}(), \"{c} {d}\");")
        lines = []
        for _ in range(POOL_LINES):
            shape = rng.choice(shapes)
            picks = rng.choices(words, k=5)
            lines.append(shape.format(i="    " * rng.randint(0, 3), a=picks[0], b=picks[1],
                                      c=picks[2], d=picks[3], e=picks[4]).encode())
        self.pool = lines
        self.rng = rng

    def new_file(self) -> array:
        """A file of a log-normal number of lines (median about 90, mean about 150)."""
        count = min(4000, max(3, int(self.rng.lognormvariate(4.5, 1.0))))
        return array("H", self.rng.choices(range(POOL_LINES), k=count))

    def edit(self, lines: array) -> array:
        """A new version of a file: a few lines replaced, inserted or removed."""
        new = array("H", lines)
        for _ in range(self.rng.randint(1, 4)):
            at = self.rng.randrange(len(new) + 1)
            kind = self.rng.random()
            chunk = array("H", self.rng.choices(range(POOL_LINES), k=self.rng.randint(1, 8)))
            if kind < 0.5 and at < len(new):
                new[at:at + len(chunk)] = chunk
            elif kind < 0.85 or len(new) < 10:
                new[at:at] = chunk
            else:
                del new[at:at + self.rng.randint(1, 5)]
        return new

    def render(self, lines: array) -> bytes:
        pool = self.pool
        return LF.join([pool[i] for i in lines]) + LF


def _directories(rng: random.Random, count: int) -> list[str]:
    """A random directory tree of ``count`` folders, shallow parts denser than deep ones."""
    dirs = list(TOP_DIRS)
    words = ("ops", "aten", "csrc", "core", "utils", "distributed", "optim", "profiler",
             "framework", "npu", "api", "jit", "fx", "nn", "contrib", "testing", "autograd",
             "custom", "kernels", "graph", "memory", "runtime", "compile", "dynamo", "elastic",
             "metrics", "rpc", "amp", "quantization", "sparse", "onnx", "export", "inductor")
    while len(dirs) < count:
        parent = rng.choice(dirs)
        if parent.count("/") >= 5:
            continue
        child = f"{parent}/{rng.choice(words)}_{rng.randint(0, 999)}"
        if child not in dirs:
            dirs.append(child)
    return dirs


def _data(out: list[bytes], payload: bytes) -> None:
    out.append(b"data %d\n" % len(payload))
    out.append(payload)
    out.append(LF)


def build(path: Path, files: int = 20000, commits: int = 4000, seed: int = 7,
          verbose: bool = True) -> SynthStats:
    """Create the bare repository at ``path`` (must not exist) and return what was built."""
    started = time.monotonic()
    path = Path(path).absolute()
    if path.exists():
        raise FileExistsError(path)
    if commits < 200:
        raise ValueError("--commits must be at least 200")
    env = git_env()
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=master", "--", str(path)],
                   check=True, env=env)
    rng = random.Random(seed)
    text = _Text(rng)
    dirs = _directories(rng, max(40, files // 18))
    dir_weight = [1.0 / (1 + d.count("/")) for d in dirs]

    all_paths: list[str] = []
    seen: set[str] = {TEST_PATH}
    while len(all_paths) < files:
        folder = rng.choices(dirs, weights=dir_weight)[0]
        name = f"{folder}/{rng.choice(('', 'test_', 'npu_', 'op_'))}{rng.randint(0, 99999)}" \
               f"{rng.choice(EXTENSIONS)}"
        if name not in seen:
            seen.add(name)
            all_paths.append(name)
    initial = files // 2  # half the files exist at the start; the rest arrive over the history

    proc = subprocess.Popen(["git", "fast-import", "--quiet", "--done"], cwd=path, env=env,
                            stdin=subprocess.PIPE)
    assert proc.stdin is not None
    stdin = proc.stdin
    mark = 0
    clock = START_TIME
    span = 7 * 365 * 86400 // commits

    def commit(ref: str, parent: int | None, changes: list[tuple[str, bytes]], msg: str) -> int:
        nonlocal mark, clock
        mark += 1
        clock += rng.randint(span // 3, span * 2)
        name, email = rng.choice(AUTHORS)
        out: list[bytes] = [b"commit %s\nmark :%d\n" % (ref.encode(), mark),
                            b"author %s <%s> %d +0800\n" % (name.encode(), email.encode(), clock),
                            b"committer %s <%s> %d +0800\n" % (name.encode(), email.encode(), clock)]
        _data(out, msg.encode())
        if parent is not None:
            out.append(b"from :%d\n" % parent)
        for file_path, payload in changes:
            out.append(b"M 100644 inline %s\n" % file_path.encode())
            _data(out, payload)
        out.append(LF)
        stdin.write(b"".join(out))
        return mark

    def message(kind: str, paths: list[str]) -> str:
        area = paths[0].split("/")[1] if paths[0].count("/") >= 1 else paths[0]
        subject = f"[{kind}] {area}: " + " ".join(rng.choices(
            ("fix", "add", "update", "support", "refactor", "remove", "align", "npu", "op",
             "test", "dtype", "shape", "stream", "memory", "profiler", "format"), k=5))
        body = "\n".join(f"- {p}" for p in paths[:4])
        return f"{subject}\n\n{body}\n"

    def modify(state: dict[str, array], count: int) -> list[tuple[str, bytes]]:
        keys = list(state) if len(state) < 64 else None
        changes = []
        for _ in range(count):
            victim = rng.choice(keys) if keys else rng.choice(existing)
            state[victim] = text.edit(state[victim])
            changes.append((victim, text.render(state[victim])))
        return changes

    # Initial import: half of the files, the metrics test file, a README.
    state: dict[str, array] = {}
    changes: list[tuple[str, bytes]] = []
    for file_path in all_paths[:initial]:
        state[file_path] = text.new_file()
        changes.append((file_path, text.render(state[file_path])))
    changes.append((TEST_PATH, TEST_CONTENT.read_bytes()))
    changes.append(("README.md", b"# synthetic upstream\n\nMade by bench/synth_repo.py.\n"))
    existing = list(all_paths[:initial])
    head = commit("refs/heads/master", None, changes, "Initial import\n")
    next_new = initial
    forks = {name: max(2, int(commits * frac)) for name, frac, _ in RELEASES}
    fork_state: dict[str, tuple[int, dict[str, array], list[str]]] = {}
    remaining_new = files - initial
    for index in range(2, commits + 1):
        if next_new < files and rng.random() < min(0.9, remaining_new / (commits - index + 1)):
            batch = all_paths[next_new:next_new + rng.randint(1, 6)]
            next_new += len(batch)
            changes = []
            for file_path in batch:
                state[file_path] = text.new_file()
                changes.append((file_path, text.render(state[file_path])))
            existing.extend(batch)
            changes += modify(state, rng.randint(0, 2))
            head = commit("refs/heads/master", head, changes, message("feature", batch))
        else:
            changes = modify(state, rng.randint(1, 6))
            head = commit("refs/heads/master", head, changes,
                          message("fix", [c[0] for c in changes]))
        for name, at in forks.items():
            if at == index:
                fork_state[name] = (head, dict(state), list(existing))
        if verbose and index % 1000 == 0:
            print(f"  synth: {index}/{commits} commits on master", file=sys.stderr)
    master_head = head
    for name, _frac, own in RELEASES:
        head, state, existing = fork_state[name]
        ref = f"refs/heads/{name}"
        for _ in range(own):
            changes = modify(state, rng.randint(1, 3))
            head = commit(ref, head, changes, message("cherry-pick", [c[0] for c in changes]))
    del master_head
    stdin.write(b"done\n")
    stdin.close()
    if proc.wait() != 0:
        raise RuntimeError(f"git fast-import failed with exit code {proc.returncode}")
    for key, value in (("uploadpack.allowFilter", "true"),
                       ("uploadpack.allowAnySHA1InWant", "true")):
        subprocess.run(["git", "config", key, value], cwd=path, check=True, env=env)
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/master"], cwd=path, check=True,
                   env=env)
    heads = subprocess.run(["git", "for-each-ref", "--format=%(refname:short) %(objectname)",
                            "refs/heads/"], cwd=path, check=True, env=env, capture_output=True,
                           text=True).stdout.split("\n")
    branches = dict(line.split(" ", 1) for line in heads if line)
    total = commits + sum(own for _, _, own in RELEASES)
    return SynthStats(path=path, files=files, commits=total,
                      seconds=time.monotonic() - started, branches=branches)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("path", type=Path, help="the bare repository to create (must not exist)")
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--commits", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    stats = build(args.path, args.files, args.commits, args.seed)
    print(f"{stats.path}: {stats.files} files, {stats.commits} commits, "
          f"{stats.seconds:.1f}s; branches {', '.join(sorted(stats.branches))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
