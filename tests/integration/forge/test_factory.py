"""make_forge and dry runs: which forge is built, and that a dry run sends no writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.errors import ConfigError
from backport.forge import dry_run_of, make_forge
from backport.forge.dryrun import DryRunForge
from backport.forge.gitcode import GitCodeForge
from backport.forge.local import LocalForge
from backport.redact import register_secret
from tests.fakes.forge import BASE, BRANCH, FORK, TOKEN, UPSTREAM, branch_map
from tests.fakes.gitcode import FakeGitCode


def test_local_forge_lives_in_the_state_dir(tmp_path: Path) -> None:
    forge = make_forge(branch_map(tmp_path, "local"), tmp_path / ".backport")
    assert isinstance(forge, LocalForge) and forge.name == "local"
    assert forge.path == tmp_path / ".backport" / "forge.sqlite"
    forge.create_pr(BRANCH, BASE, "t", "b")
    assert forge.path.exists()


def test_gitcode_forge_uses_the_api_url(tmp_path: Path, server: FakeGitCode) -> None:
    forge = make_forge(branch_map(tmp_path, "gitcode", server.url), tmp_path, token=TOKEN, timeout=5)
    assert isinstance(forge, GitCodeForge) and forge.name == "gitcode"
    forge.preflight()
    assert forge.create_pr(BRANCH, BASE, "t", "b").url.endswith("/pull/1")


def test_unknown_forge_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        make_forge(branch_map(tmp_path, "gitea"), tmp_path)
    assert "branches.yaml" in info.value.message and "gitea" in info.value.message


def run_dry(forge) -> None:
    forge.preflight()
    pr = forge.find_open_pr(BRANCH, BASE) or forge.create_pr(BRANCH, BASE, "test: add it", "x" * 1234)
    pr = forge.update_pr(pr.number, title=pr.title, body="y" * 10)
    forge.link_issues(pr.number, [3216])
    forge.add_comment(pr.number, "/ci-pytorch")
    forge.decorate(pr.number, labels=("backport",), reviewers=("alice",))


def test_gitcode_dry_run_reads_but_never_writes(tmp_path: Path, server: FakeGitCode) -> None:
    plan: list[str] = []
    bm = branch_map(tmp_path, "gitcode", server.url)
    forge = dry_run_of(make_forge(bm, tmp_path, token=TOKEN, timeout=5), bm, plan.append, None)
    assert isinstance(forge, DryRunForge) and forge.name == "gitcode"
    run_dry(forge)
    assert server.requests and {r.method for r in server.requests} == {"GET"}
    assert server.prs == {}
    assert plan[0] == (f"POST /repos/{UPSTREAM}/pulls head={FORK}:{BRANCH} base={BASE} "
                       "title='test: add it' body=<1234 chars>")
    assert any(line.startswith("POST /repos/Ascend/pytorch/pulls/<new>/issues [3216]") for line in plan)
    assert any("/labels" in line for line in plan) and any("/comments" in line for line in plan)


def test_gitcode_dry_run_updates_an_existing_pr_in_the_plan(tmp_path: Path,
                                                            server: FakeGitCode) -> None:
    existing = server.add_pr(head_repo=FORK, head=BRANCH, base=BASE, title="old")
    existing.issues.append(3216)
    plan: list[str] = []
    bm = branch_map(tmp_path, "gitcode", server.url)
    forge = dry_run_of(make_forge(bm, tmp_path, token=TOKEN, timeout=5), bm, plan.append, None)
    run_dry(forge)
    assert {r.method for r in server.requests} == {"GET"}
    assert plan[0] == f"PATCH /repos/{UPSTREAM}/pulls/{existing.number} title='old' body=<10 chars>"
    assert not any("/issues" in line for line in plan)  # already linked


def test_gitcode_dry_run_without_token_skips_reads(tmp_path: Path, server: FakeGitCode) -> None:
    plan: list[str] = []
    bm = branch_map(tmp_path, "gitcode", server.url)
    forge = dry_run_of(make_forge(bm, tmp_path, token=None), bm, plan.append, None)
    run_dry(forge)
    assert server.requests == []
    assert "skipped (no GitCode token)" in plan[0]
    assert plan[1].startswith("POST /repos/Ascend/pytorch/pulls head=")


def test_local_dry_run_writes_nothing(tmp_path: Path) -> None:
    plan: list[str] = []
    bm = branch_map(tmp_path, "local")
    forge = dry_run_of(make_forge(bm, tmp_path / ".backport"), bm, plan.append, None)
    run_dry(forge)
    assert not (tmp_path / ".backport").exists()
    assert len(plan) == 5


def test_plan_lines_are_redacted(tmp_path: Path) -> None:
    register_secret(TOKEN)  # what resolve_token does for a token it finds
    plan: list[str] = []
    bm = branch_map(tmp_path, "local")
    forge = dry_run_of(make_forge(bm, tmp_path), bm, plan.append, None)
    forge.create_pr(BRANCH, BASE, f"title with {TOKEN}", "b")
    assert TOKEN not in plan[0]


def test_the_wait_for_gitcode_to_show_a_push_comes_from_the_environment(tmp_path: Path) -> None:
    bm = branch_map(tmp_path, "gitcode")
    assert make_forge(bm, tmp_path, token=TOKEN, environ={}).settle == 2.0
    forge = make_forge(bm, tmp_path, token=TOKEN, environ={"BACKPORT_GITCODE_SETTLE": "0.5"})
    assert forge.settle == 0.5
    for bad in ("soon", "-1", "nan"):
        with pytest.raises(ConfigError, match=f"BACKPORT_GITCODE_SETTLE={bad!r} is not"):
            make_forge(bm, tmp_path, token=TOKEN, environ={"BACKPORT_GITCODE_SETTLE": bad})
