"""A patch set whose test needs torch but not torch's test harness, for tests whose subject is
the run around the test (its warm worker, the sandbox), not what the test imports.

The demo's put_metric test runs through ``torch.testing._internal.common_utils``, whose
``TestCase.run`` imports ``torch._dynamo`` (seconds of CPU) in the test's fork. A plain
``unittest`` test over torch runs the same steps."""

from __future__ import annotations

from pathlib import Path

import yaml

from backport.demo.sandbox import Sandbox
from tests.helpers.project import git

TEST_FILE = "test/test_plain_torch.py"
TEST_TEXT = '''\
import unittest

import torch


class PlainTorch(unittest.TestCase):
    def test_sum(self):
        self.assertEqual(torch.ones(3).sum().item(), 3.0)


if __name__ == "__main__":
    unittest.main()
'''


def plain_patch_file(sandbox: Sandbox, tmp_path: Path, api: str, out: Path,
                     text: str = TEST_TEXT) -> Path:
    """One commit adding TEST_FILE (``text``), made on v2.7.1 and written by git format-patch
    into ``out``; the patch file."""
    work = tmp_path / f"work-{api}"
    git(tmp_path, "clone", "-q", "--branch", "v2.7.1", str(sandbox.upstream), str(work))
    (work / TEST_FILE).write_text(text, encoding="utf-8")
    git(work, "add", TEST_FILE)
    git(work, "commit", "-q", "-m", f"test: {api}")
    out.mkdir(parents=True)
    git(work, "format-patch", "-q", "-1", "-o", str(out))
    (patch,) = out.glob("0001-*.patch")
    return patch


def add_plain_patch_set(sandbox: Sandbox, tmp_path: Path, api: str,
                        branches: list[str], text: str = TEST_TEXT) -> None:
    """patches/<api>/: the commit of :func:`plain_patch_file`, for ``branches``."""
    out = sandbox.project / "patches" / api
    plain_patch_file(sandbox, tmp_path, api, out, text)
    (out / "patch.yaml").write_text(yaml.safe_dump({
        "api": f"torch.{api}", "issue": 3217, "title": f"test: {api}",
        "tests": [{"path": TEST_FILE, "args": ["-v"]}], "device": "none",
        "branches": branches}, sort_keys=False), encoding="utf-8")
