"""The whole `apply`, as a PR author's test meets it: a test that plants a repository in its
temporary folder, writes into every temporary folder, every sibling folder of its worktree and
the git folders, and rewrites its own `.git`, on two branches served by one warm worker. Every
branch is still published, nothing outside the test's own worktree changed, and a re-run does
nothing (issue 47's "done when")."""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path

from backport.demo.sandbox import Sandbox
from tests.helpers.plain_patch import add_plain_patch_set
from tests.helpers.project import git, needs_torch, run_app, sandbox  # noqa: F401 - the fixture

from .conftest import HOSTILE, needs_namespaces

pytestmark = needs_torch

BRANCHES = ["v2.12.0", "master"]  # one environment: both tests are forks of one warm worker

# The test file: runs the hostile script from its worktree's root, and passes.
TEST_TEXT = '''\
import os
import sys
import unittest

HOSTILE = {hostile!r}


class Hostile(unittest.TestCase):
    def test_keeps_something(self):
        os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sys.argv = ["hostile", {marker!r}, {canary!r}]
        exec(compile(HOSTILE, "hostile", "exec"), {{"__name__": "hostile"}})


if __name__ == "__main__":
    unittest.main()
'''


def _fork_heads(sb: Sandbox) -> dict[str, str]:
    listed = git(sb.fork, "for-each-ref", "--format=%(refname:short) %(objectname)",
                 "refs/heads")
    return dict(line.split() for line in listed.splitlines())


def _planted(top: Path, marker: str) -> list[str]:
    """Files named with ``marker`` under ``top``, but the test's own (``mine-…``)."""
    return sorted(os.path.join(root, name) for root, _dirs, files in os.walk(top)
                  for name in files if marker in name and not name.startswith("mine-"))


def test_a_hostile_test_keeps_nothing_every_branch_publishes_and_a_rerun_does_nothing(
        sandbox: Sandbox, tmp_path: Path) -> None:  # noqa: F811
    needs_namespaces()
    marker = f"hostile{uuid.uuid4().hex}"
    canary = Path(tempfile.gettempdir()) / f"canary-{marker}"
    canary.write_text("the host's\n", encoding="utf-8")
    planted_git = Path(tempfile.gettempdir()) / ".git" / "config"
    before = planted_git.read_text("utf-8") if planted_git.exists() else None
    try:
        text = TEST_TEXT.format(hostile=HOSTILE, marker=marker, canary=str(canary))
        add_plain_patch_set(sandbox, tmp_path, "hostile", BRANCHES, text)
        first = run_app(sandbox.project, "apply", "--api", "hostile", "--json")
        assert first.code == 0, first.err
        rows = {row["target"]: row for row in json.loads(first.out)["branches"]}
        assert sorted(rows) == sorted(BRANCHES)
        for target, row in rows.items():
            assert row["pr"] is not None, (target, row)
            log = Path(row["test"]["log"]).read_text("utf-8", "replace")
            assert "TRIED ALL" in log, log  # the hostile code ran, and was refused:
            assert "DID pointer" not in log and "DID sibling" not in log, log
        heads = _fork_heads(sandbox)
        assert {f"test-hostile-{t}" for t in BRANCHES} <= set(heads)
        # nothing of the test outside its own worktree: project, cache, upstream, fork, /tmp
        home = Path(os.environ["BACKPORT_CACHE"])
        for top in (sandbox.root, home):
            assert _planted(top, marker) == [], top
        for folder in {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}:  # shared: its top
            assert [n for n in os.listdir(folder) if marker in n and n != canary.name] == []
        assert canary.read_text("utf-8") == "the host's\n"
        assert (planted_git.read_text("utf-8") if planted_git.exists() else None) == before

        again = run_app(sandbox.project, "apply", "--api", "hostile", "--json")
        assert again.code == 0, again.err
        assert _fork_heads(sandbox) == heads
        numbers = {row["target"]: row["pr"]["number"]
                   for row in json.loads(again.out)["branches"]}
        assert numbers == {t: rows[t]["pr"]["number"] for t in BRANCHES}
    finally:
        canary.unlink(missing_ok=True)
