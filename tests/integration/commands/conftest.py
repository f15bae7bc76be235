"""Helpers of the command tests: an upstream history for the audit."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

# Small upstream histories for the audit's tests: a work tree whose commits carry a given
# message and age, and GitCode's squash message.
UP = "Ascend/pytorch"
DAY = 24 * 3600
LINES = [f"value_{n} = {n}\n" for n in range(64)]
TEST = ("import unittest\n\n\nclass TestA(unittest.TestCase):\n    def test_one(self):\n"
        "        self.assertTrue(True)\n")


def squash(number: int, head: str, base: str, title: str, body: str = "") -> str:
    return (f"{title}\n\n# message auto-generated for no-merge-commit merge:\n!{number} merge "
            f"{head} into {base}\n\n{title}\n\nDescription: {body}\n\nSee merge request: "
            f"{UP}!{number}\n")


class Work:
    """A work tree whose commits carry the given message and age."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.run("init", "-q", "-b", "master")

    def run(self, *args: str, days: float = 0) -> str:
        when = f"@{int(time.time() - days * DAY)} +0000"
        env = {**os.environ, "LANG": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "Li",
               "GIT_AUTHOR_EMAIL": "li@example.com", "GIT_COMMITTER_NAME": "Li",
               "GIT_COMMITTER_EMAIL": "li@example.com", "GIT_AUTHOR_DATE": when,
               "GIT_COMMITTER_DATE": when}
        return subprocess.run(["git", *args], cwd=self.path, env=env, check=True,
                              capture_output=True, text=True).stdout.strip()

    def commit(self, files: dict[str, str], message: str, days: float) -> str:
        for name, text in files.items():
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            (self.path / name).write_text(text, encoding="utf-8")
        self.run("add", "-A")
        self.run("commit", "-q", "--allow-empty", "-m", message, days=days)
        return self.run("rev-parse", "HEAD")

    def line(self, index: int, text: str) -> dict[str, str]:
        lines = (self.path / "torch_npu/a.py").read_text(encoding="utf-8").splitlines(True)
        lines[index] = text
        return {"torch_npu/a.py": "".join(lines)}
