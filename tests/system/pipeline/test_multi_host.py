"""Branches tested on different hosts: every PR shows every branch's real result.

Four project folders stand for four hosts (each its own cache and journal); they share the
upstream, the fork and one GitCode stand-in on 127.0.0.1, as runners of the CI matrix do
(their worktree folders are one folder; each host works on its own target's worktree there).
Each run has its warm worker of its own; every result comes from one host's run and
reaches the others only through GitCode. Tests run under real
torch (BACKPORT_TEST_PYTHON); with BACKPORT_REAL_REPO the upstream's test file is the real
Ascend/pytorch one of each branch (``Ran 7 tests``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from backport.demo.sandbox import TEST_PATH, Sandbox
from backport.report import regions as rg
from tests.fakes.gitcode import FakeGitCode, Fault
from tests.helpers.evidence import evidence_fields, evidence_text, shared_record
from tests.helpers.project import TOKEN, Result, git, needs_torch, run_app

pytestmark = needs_torch

TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
REAL_REPO = os.environ.get("BACKPORT_REAL_REPO")
# The real pre-states of the four branches (tests/integration/patches/test_put_metric_patch.py).
PRE_STATES = {"v2.7.1": "82ea54ed3", "v2.11.0": "d5bd55141", "v2.12.0": "8c57daccf",
              "master": "c6b207c55"}
RAN = "Ran 7 tests" if REAL_REPO else "Ran 4 tests"
NOTE = "Maintainer note: checked on an Atlas 800T A2 as well."


@dataclass
class Host:
    """One machine: a project folder, its own cache; the run's environment variables."""

    name: str
    project: Path
    env: dict[str, str]

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "backport", *args], cwd=self.project,
                                env={**os.environ, **self.env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def run_here(self, *args: str) -> Result:
        """The CLI's entry point in this process (`run_app`), with this host's variables."""
        return run_app(self.project, *args, env=self.env)


def finish(proc: subprocess.Popen[str]) -> Result:
    out, err = proc.communicate(timeout=600)
    return Result(proc.returncode, out, err)


def _real_test_files(sandbox: Sandbox, work: Path) -> None:
    """Give each upstream branch the real test file of its Ascend/pytorch pre-state."""
    git(work.parent, "clone", "-q", str(sandbox.upstream), str(work))
    for target, sha in PRE_STATES.items():
        git(work, "checkout", "-q", "-B", target, f"origin/{target}")
        text = subprocess.run(["git", "--git-dir", str(REAL_REPO), "show", f"{sha}:{TEST_PATH}"],
                              capture_output=True, text=True, check=True).stdout
        (work / TEST_PATH).write_text(text, encoding="utf-8")
        git(work, "commit", "-q", "-am", f"the real test file of {target}")
        git(work, "push", "-q", "origin", f"HEAD:refs/heads/{target}")


@pytest.fixture
def hosts(sandbox: Sandbox, gitcode: FakeGitCode, tmp_path: Path) -> list[Host]:
    if REAL_REPO:
        _real_test_files(sandbox, tmp_path / "upstream-work")
    worktrees = tmp_path / "worktrees"  # every host's worktree folder (see the docstring)
    worktrees.mkdir()
    made = []
    for index, target in enumerate(TARGETS):
        root = tmp_path / f"host-{index}"
        project = root / "project"
        shutil.copytree(sandbox.project, project, ignore=shutil.ignore_patterns(".backport"))
        (project / ".backport").mkdir(mode=0o700)
        (project / ".backport" / "worktrees").symlink_to(worktrees, target_is_directory=True)
        cache = root / "cache"
        cache.mkdir(parents=True)
        made.append(Host(target, project, {
            "GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
            "BACKPORT_CACHE": str(cache)}))
    return made


def apply(host: Host, *extra: str) -> subprocess.Popen[str]:
    return host.start("apply", "--api", "put_metric", "--branch", host.name, *extra)


def results_table(body: str) -> dict[str, str]:
    """The validation region's result table: target -> result cell."""
    region = rg.find_regions(body)["validation"]
    rows = re.findall(r"^\| (\S+) \| (.+) \|$", region.content(body), re.M)
    return {target: cell for target, cell in rows if target in TARGETS}


def open_bodies(server: FakeGitCode) -> dict[str, str]:
    return {pr.base_ref: pr.body for pr in server.open_prs()}


def test_four_hosts_every_pr_shows_every_result_and_a_moved_branch_is_stale(hosts, gitcode,
                                                                           sandbox):
    by_name = {h.name: h for h in hosts}
    # Two runners one after the other.
    for name in ("v2.12.0", "master"):
        result = finish(apply(by_name[name]))
        assert result.code == 0, result.err
    # A maintainer adds a note to the v2.12.0 PR, outside the generated regions.
    (pr_v212,) = gitcode.open_prs(base="v2.12.0")
    pr_v212.body += f"\n{NOTE}\n"
    # Two runners at the same time: each reads the set before either opens its PR.
    barrier = threading.Barrier(2)
    gitcode.add_fault("GET", r"/pulls$", Fault(barrier=barrier), Fault(barrier=barrier))
    together = [apply(by_name["v2.7.1"]), apply(by_name["v2.11.0"])]
    for result in map(finish, together):
        assert result.code == 0, result.err
    assert not barrier.broken

    bodies = open_bodies(gitcode)
    assert sorted(bodies) == sorted(TARGETS)
    for target, body in bodies.items():
        table = results_table(body)
        assert sorted(table) == sorted(TARGETS), target
        for cell in table.values():
            assert cell.startswith(f"{RAN} in ") and "OK" in cell and "未运行" not in cell, (target, table)
        assert "尚未运行" not in body and "未探测运行环境" not in body
        assert evidence_fields(body)["TARGET_BRANCH"] == target
        assert f"\nRESULT:\n{RAN} in " in evidence_text(body)
        shown = shared_record(body, target)
        assert shown.test is not None and shown.test.summary_lines[-1] == "OK"
        assert shown.head == git(sandbox.fork, "rev-parse", f"test-put-metric-{target}")
        assert "# 未运行" not in rg.find_regions(body)["validation"].content(body)
    assert NOTE in bodies["v2.12.0"]
    assert all(not pr.draft for pr in gitcode.open_prs())

    # Someone pushes onto the v2.7.1 fork branch; the next run elsewhere shows that result stale.
    tested = git(sandbox.fork, "rev-parse", "test-put-metric-v2.7.1")
    work = sandbox.root / "someone"
    git(sandbox.root, "clone", "-q", "-b", "test-put-metric-v2.7.1", str(sandbox.fork), str(work))
    (work / "SOMEONE.txt").write_text("a fix\n", encoding="utf-8")
    git(work, "add", "SOMEONE.txt")
    git(work, "commit", "-q", "-m", "someone's fix")
    git(work, "push", "-q", "origin", "HEAD")
    moved = git(work, "rev-parse", "HEAD")
    again = finish(apply(by_name["master"], "--force"))
    assert again.code == 0, again.err
    bodies = open_bodies(gitcode)
    bodies_numbers = {pr.base_ref: pr.number for pr in gitcode.open_prs()}
    for target, body in bodies.items():
        cell = results_table(body)["v2.7.1"]
        assert f"该结果测于 {tested[:12]}；Fork 分支已被他人更新为 {moved[:12]}，未经本工具测试" in cell, target
    fields = evidence_fields(bodies["v2.7.1"])
    assert fields["HEAD_COMMIT"] == moved and fields["TESTED_COMMIT"] == tested
    assert "STALE" in fields
    shown = shared_record(bodies["v2.7.1"], "v2.7.1")
    assert shown.head == moved and shown.test is not None and shown.test.commit == tested
    assert NOTE in bodies["v2.12.0"]

    # Any host sees the set as GitCode shows it, wherever each branch ran.
    shown = by_name["v2.11.0"].run_here("status", "--api", "put_metric", "--from-forge", "--json")
    assert shown.code == 0, shown.err
    rows = {row["target"]: row for row in shown.json()["branches"]}
    assert sorted(rows) == sorted(TARGETS)
    for target, row in rows.items():
        assert row["pr"]["url"].endswith(f"/{bodies_numbers[target]}")
        assert row["ok"] is True and row["result"].startswith(RAN), row
        assert row["stale"] is (target == "v2.7.1")
    assert rows["v2.7.1"]["tested_commit"] == tested and rows["v2.7.1"]["head_commit"] == moved
    table = by_name["v2.11.0"].run_here("status", "--api", "put_metric", "--from-forge")
    assert table.code == 0 and f"{tested[:12]} (stale)" in table.out, table.out + table.err


def test_a_failing_branch_read_from_its_pr_stays_draft_when_another_host_refreshes_it(
        hosts, gitcode):
    gitcode.draft_from_title = True  # the service derives draft from a title sent alone
    failing, passing = hosts[0], hosts[3]
    patch = next((failing.project / "patches" / "put_metric").glob("0001-*.patch"))
    patch.write_text(patch.read_text().replace(
        '+                self.assertGreater(record.timestamp, 0)',
        '+                self.assertLess(record.timestamp, 0)'))
    failed = finish(apply(failing, "--pr-on-failure"))
    assert failed.code == 1
    (draft,) = gitcode.open_prs(base="v2.7.1")
    assert draft.draft
    before = draft.body
    ok = finish(apply(passing))
    assert ok.code == 0, ok.err
    (draft,) = gitcode.open_prs(base="v2.7.1")
    assert draft.body != before  # refreshed with master's result ...
    assert "FAILED" in results_table(draft.body)["v2.7.1"]
    assert draft.draft and draft.title.startswith("[WIP]")  # ... and still a draft
    (ready,) = gitcode.open_prs(base="master")
    assert not ready.draft
