"""Make N small patch sets for the batch benchmark, each adding its own torch test file.

The patches come from real commits: a blobless, sparse clone of the upstream's ``master`` gets
one commit per patch set (``test/bench/test_bench_NN.py``), exported with ``git format-patch``
next to a ``patch.yaml`` that lists the new test.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

TARGETS = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
AUTHOR = ("bench bot", "bench@example.invalid")

TEST_TEMPLATE = '''"""Benchmark test {nn}: a few cheap torch checks."""

import unittest

import torch


class TestBench{nn}(unittest.TestCase):

    def test_add_{nn}(self):
        x = torch.arange({n}, dtype=torch.float32)
        self.assertEqual(float((x + x).sum()), float(2 * x.sum()))

    def test_matmul_{nn}(self):
        a = torch.eye(4) * {n}
        self.assertTrue(torch.equal(a @ torch.eye(4), a))

    def test_shape_{nn}(self):
        self.assertEqual(torch.zeros(2, {n}).reshape(-1).shape, (2 * {n},))


if __name__ == "__main__":
    unittest.main()
'''

PATCH_YAML = """api: torch.bench.op_{nn}
issue: {issue}
title: "test: add bench op_{nn} coverage"
tests:
  - path: test/bench/test_bench_{nn}.py
    args: ["-v"]
device: none
branches: [{targets}]
"""


def _git(args: list[str], cwd: Path) -> str:
    name, email = AUTHOR
    env = {**os.environ, "LANG": "C", "LC_ALL": "C", "GIT_AUTHOR_NAME": name,
           "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
           "GIT_AUTHOR_DATE": "2026-08-01T09:00:00+08:00",
           "GIT_COMMITTER_DATE": "2026-08-01T09:00:00+08:00"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def make_patch_sets(upstream_url: str, scratch: Path, out: Path, count: int) -> list[str]:
    """Write ``out/bench_NN/`` for NN = 01..count; return the patch set names."""
    _git(["clone", "--quiet", "--filter=blob:none", "--sparse", "--branch", "master", "--",
          upstream_url, str(scratch)], cwd=scratch.parent)
    _git(["sparse-checkout", "set", "test/bench"], cwd=scratch)
    names = []
    for index in range(1, count + 1):
        nn = f"{index:02d}"
        name = f"bench_{nn}"
        _git(["checkout", "--quiet", "-B", name, "master"], cwd=scratch)
        test = scratch / "test" / "bench" / f"test_bench_{nn}.py"
        test.parent.mkdir(parents=True, exist_ok=True)
        test.write_text(TEST_TEMPLATE.format(nn=nn, n=index + 2), encoding="utf-8")
        _git(["add", "--", str(test.relative_to(scratch))], cwd=scratch)
        _git(["commit", "--quiet", "-m", f"test: add bench op_{nn} coverage\n\n"
              f"Related issue: Ascend/pytorch#{9000 + index}"], cwd=scratch)
        target = out / name
        target.mkdir(parents=True)
        _git(["format-patch", "--quiet", "-1", "-o", str(target), "HEAD"], cwd=scratch)
        (target / "patch.yaml").write_text(
            PATCH_YAML.format(nn=nn, issue=9000 + index, targets=", ".join(TARGETS)),
            encoding="utf-8")
        names.append(name)
    return names
