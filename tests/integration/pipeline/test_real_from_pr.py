"""`--from-pr` on a copy of the real Ascend/pytorch (``BACKPORT_REAL_REPO``), its PRs served by
the GitCode stand-in as GitCode's single-PR answer shows them: no ``merge_commit_sha``, and a
head commit the upstream no longer serves after the squash merge."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.fakes.gitcode import FakeGitCode, FakePR, git_branch_checker, git_files
from tests.helpers.project import TOKEN, TORCH_PYTHON, run_app
from tests.helpers.real_repo import (
    MIRROR,
    PRE_STATES,
    TEST_FILE,
    git_out,
    needs_mirror,
    real_project,
)

pytestmark = needs_mirror
RELEASES = ("v2.7.1", "v2.11.0", "v2.12.0")
SQUASH_42810 = "1292bcfa1"
UNSERVED_HEAD = "e" * 40  # the PR's own head: gone after the squash merge
SAMPLE = 4  # real test-only changes of 2026 compared with `new --from <commit>`


def _message(sha: str) -> str:
    return git_out("--git-dir", str(MIRROR), "log", "-1", "--format=%B", sha)


def _serve_merged(server: FakeGitCode, number: int, sha: str, issue: int = 3216) -> None:
    """PR ``number`` as GitCode shows it once squash-merged into master as ``sha``: its files
    are those of the squash commit itself, its merge time the commit's (as GitCode records
    both), so the proof of the source is checked not to reject real squash merges."""
    message = _message(sha)
    merged_at = git_out("--git-dir", str(MIRROR), "log", "-1", "--format=%cI", sha)
    with server.lock:
        server.prs[number] = FakePR(
            number=number, id=900000 + number, title=message.splitlines()[0],
            body=message.partition("Description:")[2] or message, head_repo="lgxxx/pytorch",
            head_ref=f"pr-{number}-head", base_ref="master", author="lgxxx", state="merged",
            head_sha=UNSERVED_HEAD, issues=[issue], merged_at=merged_at,
            files=git_files(MIRROR, f"{sha}~1", sha))


def _project(tmp_path: Path, heads: dict[str, str]) -> tuple[Path, dict[str, str], FakeGitCode]:
    project, env = real_project(tmp_path, heads)
    server = FakeGitCode(tokens={TOKEN}, upstream="Ascend/pytorch", fork="lgxxx/pytorch",
                         first_number=50000,
                         branch_exists=git_branch_checker({"lgxxx/pytorch": tmp_path / "fork.git"}))
    server.start()
    config = project / "branches.yaml"
    data = yaml.safe_load(config.read_text("utf-8"))
    data.update(forge="gitcode", api_url=server.url)
    config.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return project, {**env, "GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1"}, server


@pytest.mark.skipif(not TORCH_PYTHON, reason="BACKPORT_TEST_PYTHON is not set")
def test_42810_found_by_its_squash_commit_and_tested_on_three_branches(tmp_path: Path) -> None:
    project, env, server = _project(tmp_path, {**{b: PRE_STATES[b] for b in RELEASES},
                                               "master": "master"})
    try:
        _serve_merged(server, 42810, SQUASH_42810)
        result = run_app(project, "apply", "--from-pr", "42810", "--json", env=env)
        assert result.code == 0, result.err
        data = yaml.safe_load((project / "patches" / "pr-42810" / "patch.yaml").read_text("utf-8"))
        squash = git_out("--git-dir", str(MIRROR), "rev-parse", SQUASH_42810)
        assert data["source_commit"] == squash
        assert data["source_found_by"] == "squash message" and data["source_merged"] is True
        assert data["branches"] == list(RELEASES)
        assert data["api"] == "torch.distributed.elastic.metrics.put_metric"
        assert [t["path"] for t in data["tests"]] == [TEST_FILE]
        for branch in result.json()["branches"]:
            assert branch["status"] == "done", branch["message"]
            assert branch["test"]["patch_tests"] == [["test_put_metric", "ok"]]
        opened = {p.base_ref: p for p in server.open_prs() if p.head_repo == "lgxxx/pytorch"}
        assert sorted(opened) == sorted(RELEASES)
        for pr in opened.values():
            assert "!42810" in pr.body
            evidence = pr.body.split("<!-- api-validation-evidence:start -->", 1)[1]
            assert "\nPATCH_TESTS=test_put_metric ok\n" in evidence
            assert f"\nSOURCE=Ascend/pytorch!42810@{squash}\n" in evidence
    finally:
        server.stop()


def _test_only_commits() -> list[tuple[str, int]]:
    """Commits of master since 2026-01-01 that change only files under test/, with their PR."""
    out = subprocess.run(["git", "--git-dir", str(MIRROR), "log", "master", "--since=2026-01-01",
                          "--no-merges", "--format=%x00%H", "--name-only"],
                         capture_output=True, text=True, check=True).stdout
    found = []
    for record in out.split("\x00")[1:]:
        sha, *paths = [line for line in record.splitlines() if line]
        if paths and all(p.startswith("test/") for p in paths):
            trailers = [line for line in _message(sha).splitlines()
                        if line.startswith("See merge request: Ascend/pytorch!")]
            if trailers:
                found.append((sha, int(trailers[-1].rpartition("!")[2])))
    return found


def _split(patch: str) -> tuple[str, str]:
    """A format-patch file's header and message, and the rest (stat, diff, signature)."""
    head, _, rest = patch.partition("\n---\n")
    return head, rest


def _author_and_date(head: str) -> list[str]:
    return [line for line in head.splitlines() if line.startswith(("From: ", "Date: "))]


def test_the_from_pr_route_gives_the_same_patches_as_new_from(tmp_path: Path) -> None:
    commits = _test_only_commits()
    assert len(commits) >= SAMPLE
    sample = commits[:: len(commits) // SAMPLE][:SAMPLE]
    project, env, server = _project(tmp_path, {**{b: PRE_STATES[b] for b in RELEASES},
                                               "master": "master"})
    try:
        for sha, number in sample:
            _serve_merged(server, number, sha, issue=1)
            common = ("--api", "torch.sample", "--issue", "1")
            by_pr = run_app(project, "new", f"by-pr-{number}", "--from-pr", str(number), *common,
                            env=env)
            assert by_pr.code == 0, by_pr.err
            by_commit = run_app(project, "new", f"by-commit-{number}", "--from", sha, "--repo",
                                str(MIRROR), *common, env=env)
            assert by_commit.code == 0, by_commit.err
            pr_dir = project / "patches" / f"by-pr-{number}"
            commit_dir = project / "patches" / f"by-commit-{number}"
            patches = sorted(p.name for p in pr_dir.glob("*.patch"))
            assert patches == sorted(p.name for p in commit_dir.glob("*.patch"))
            for name in patches:
                by_pr_head, by_pr_diff = _split((pr_dir / name).read_text("utf-8"))
                by_commit_head, by_commit_diff = _split((commit_dir / name).read_text("utf-8"))
                assert by_pr_diff == by_commit_diff, name
                assert _author_and_date(by_pr_head) == _author_and_date(by_commit_head), name
                # The from-PR route restates GitCode's squash message as the backport's own.
                assert by_pr_head.endswith(f"\n\nBackport of Ascend/pytorch!{number}.\n"
                                           f"(cherry picked from commit {sha})"), name
                assert "See merge request:" not in by_pr_head, name
            pr_spec = yaml.safe_load((pr_dir / "patch.yaml").read_text("utf-8"))
            commit_spec = yaml.safe_load((commit_dir / "patch.yaml").read_text("utf-8"))
            assert pr_spec["tests"] == commit_spec["tests"]
            assert pr_spec["source_commit"] == sha, (number, pr_spec["source_found_by"])
            assert pr_spec["branches"] == list(RELEASES)
    finally:
        server.stop()


def test_42810_is_proven_by_its_files_and_merge_time_on_the_real_master(tmp_path: Path) -> None:
    project, env, server = _project(tmp_path, {**{b: PRE_STATES[b] for b in RELEASES},
                                               "master": "master"})
    try:
        _serve_merged(server, 42810, SQUASH_42810)
        result = run_app(project, "new", "real", "--from-pr", "42810", "--api",
                         "torch.distributed.elastic.metrics.put_metric", env=env)
        assert result.code == 0, result.err
        data = yaml.safe_load((project / "patches" / "real" / "patch.yaml").read_text("utf-8"))
        assert data["source_commit"] == git_out("--git-dir", str(MIRROR), "rev-parse",
                                                SQUASH_42810)
        assert data["source_found_by"] == "squash message"
        assert "not taken" not in result.out  # nothing else on master names !42810 that way
    finally:
        server.stop()
