"""Reading a set as the forge shows it: one list, own-fork PRs only, fork heads by ls-remote."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from backport.forge.gitcode import GitCodeForge
from backport.forge.local import LocalForge
from backport.pipeline.pr_step import forge_records, read_set, refresh_sibling_pr
from backport.pipeline.session import BranchJob
from backport.report.body import render_body
from tests.fakes.gitcode import FakeGitCode
from tests.helpers import report_fixtures as fx
from tests.helpers.project import git

from .conftest import journal_holding

TOKEN = "gct-shared-results-0001"


def _fork(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "fork"
    repo.mkdir()
    git(repo, "init", "-q")
    heads = {}
    for target in ("v2.7.1", "master"):
        (repo / "f.txt").write_text(target, encoding="utf-8")
        git(repo, "add", "f.txt")
        git(repo, "commit", "-q", "-m", target)
        git(repo, "branch", f"test-put-metric-{target}")
        heads[target] = git(repo, "rev-parse", "HEAD")
    return repo, heads


def test_one_list_only_the_forks_open_prs_and_cut_bodies_read_once(tmp_path: Path) -> None:
    fork, heads = _fork(tmp_path)
    server = FakeGitCode(tokens={TOKEN}, upstream="Ascend/pytorch", fork="lgxxx/pytorch",
                         list_body_limit=400).start()
    try:
        recs = fx.records()
        for rec in recs:  # the v2.7.1 record says the head it was tested at; master's moved
            rec["pushed_sha"] = heads.get(rec["target"], rec["pushed_sha"])
            rec["test"]["commit"] = rec["pushed_sha"]
        recs[3]["pushed_sha"] = recs[3]["test"]["commit"] = "d" * 40

        def add(target: str, head_repo: str = "lgxxx/pytorch", state: str = "open"):
            body = render_body(fx.context(target, recs=recs))
            return server.add_pr(head_repo=head_repo, head=f"test-put-metric-{target}",
                                 base=target, body=body, state=state)
        mine_v271, mine_master = add("v2.7.1"), add("master")
        add("v2.11.0", head_repo="someone/pytorch")  # another fork's branch of the same name
        add("v2.12.0", state="closed")
        bm = dataclasses.replace(fx.branch_map(), fork_url=str(fork))
        forge = GitCodeForge(server.url, "Ascend/pytorch", "lgxxx/pytorch", TOKEN, settle=0.0)
        state = read_set(forge, fx.patch_set(), bm)
        assert {t: pr.number for t, pr in state.prs.items()} == {
            "v2.7.1": mine_v271.number, "master": mine_master.number}
        assert sorted(state.shared) == ["master", "v2.7.1"]
        assert state.heads == {"v2.7.1": heads["v2.7.1"], "master": heads["master"]}
        lists = [r for r in server.requests if r.path.endswith("/pulls")]
        singles = [r.path for r in server.requests if "/pulls/" in r.path]
        # One listing: its page of open PRs (shorter than 20, so the last), then the locked ones
        assert [(r.query.get("state"), r.query.get("page")) for r in lists] == [
            ("open", "1"), ("locked", "1")]
        assert sorted(singles) == sorted(f"/repos/Ascend/pytorch/pulls/{pr.number}"
                                         for pr in (mine_v271, mine_master))
        _, records = forge_records(forge, fx.patch_set(), bm)
        assert records["master"].fork_sha == heads["master"]  # moved since: stale
        assert records["master"].test is not None
        assert records["master"].test.commit == "d" * 40
        assert records["v2.7.1"].fork_sha is None
    finally:
        server.stop()


def test_a_refresh_reads_the_pr_again_before_writing_and_keeps_an_edit_made_since_the_list(
        tmp_path: Path) -> None:
    ps, bm = fx.patch_set(), fx.branch_map()
    bm = dataclasses.replace(bm, fork_url=str(tmp_path / "no-fork"))  # heads unreadable
    forge = LocalForge(tmp_path / "forge.sqlite", upstream=bm.upstream, fork=bm.fork)
    recs = fx.records()
    early = [*recs[:1], *[{"target": r["target"], "fork_branch": r["fork_branch"]}
                          for r in recs[1:]]]
    pr = forge.create_pr("test-put-metric-v2.7.1", "v2.7.1", ps.title,
                         render_body(fx.context("v2.7.1", recs=early)))
    state = read_set(forge, ps, bm)  # the list sees the body before the maintainer's edit
    edited = pr.body + "\nMaintainer: please also run on 910B.\n"
    forge.update_pr(pr.number, title=pr.title, body=edited)
    journal = journal_holding(tmp_path / "state", ps.name, ps.api, fx.typed(recs))
    job = BranchJob(ps, "v2.7.1", "test-put-metric-v2.7.1", journal, lambda step, detail: None)
    assert refresh_sibling_pr(job, forge, None, bm, list(ps.branches), state,
                              frozenset(fx.TARGETS))
    body = forge.get_pr(pr.number).body
    assert "Maintainer: please also run on 910B." in body
    assert "未运行" not in body  # and the results of the other branches are in
    # Nothing changed since: nothing is written.
    assert not refresh_sibling_pr(job, forge, None, bm, list(ps.branches),
                                  read_set(forge, ps, bm), frozenset(fx.TARGETS))
