"""`Forge.later_prs`: the open and merged PRs into a target opened after a source PR, on the
GitCode stand-in (real HTTP on 127.0.0.1, both list orders) and on the local forge."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.forge.local import LocalForge
from tests.fakes.forge import FORK, TOKEN, UPSTREAM, SleepLog, make_gitcode
from tests.fakes.gitcode import FakeGitCode, Fault

SEEDS = [  # (base, state) in the order they are opened: numbers 1, 2, 3...
    ("v2.7.1", "merged"),  # 1: before the source, so it cannot carry it
    ("master", "merged"),  # 2: the source PR
    ("v2.7.1", "open"),  # 3
    ("v2.7.1", "merged"),  # 4
    ("v2.7.1", "closed"),  # 5: closed unmerged carries nothing
    ("v2.11.0", "open"),  # 6: another target
]


def _merged_reads(server: FakeGitCode) -> int:
    return sum(1 for r in server.requests
               if r.method == "GET" and r.path.endswith("/pulls") and r.query.get("state") == "merged")


def test_gitcode_lists_open_and_merged_prs_into_the_base_after_the_source(server, gitcode):
    for base, state in SEEDS:
        server.add_pr(head_repo="someone/pytorch", head=f"b{base}", base=base, state=state)
    found = gitcode.later_prs(2, "v2.7.1")
    assert [(p.number, p.state, p.base) for p in found] == [(3, "open", "v2.7.1"),
                                                           (4, "merged", "v2.7.1")]
    assert found[0].head_repo == "someone/pytorch" and found[0].url.endswith("/3")


def test_local_forge_lists_the_same(tmp_path: Path):
    db = tmp_path / "forge.sqlite"
    forge = LocalForge(db, upstream=UPSTREAM, fork=FORK)
    for base, state in SEEDS:
        forge.add_source_pr(head=f"b{base}", base=base, title="t", body="b", author="someone",
                            state=state)
    found = forge.later_prs(2, "v2.7.1")
    assert [(p.number, p.state, p.base) for p in found] == [(3, "open", "v2.7.1"),
                                                           (4, "merged", "v2.7.1")]
    assert LocalForge(tmp_path / "none.sqlite", upstream=UPSTREAM, fork=FORK).later_prs(1, "x") == []


@pytest.mark.parametrize("oldest_first", [False, True])
def test_the_merged_listing_ends_at_the_source_only_when_it_comes_newest_first(oldest_first):
    server = FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK, oldest_first=oldest_first)
    server.start()
    try:
        for _ in range(150):  # merged long before the source: pages the look-up need not read
            server.add_pr(head_repo="someone/pytorch", head="old", base="v2.7.1", state="merged")
        source = server.add_pr(head_repo="someone/pytorch", head="topic", base="master",
                               state="merged")
        later = server.add_pr(head_repo="Ascend/pytorch", head="cherry-pick-mr-151-1-auto",
                              base="v2.7.1", state="merged")
        found = make_gitcode(server, SleepLog()).later_prs(source.number, "v2.7.1")
        assert [p.number for p in found] == [later.number]
        # newest first: one page holds the later PR and shows the order; oldest first (the
        # order asked not honoured): every page, up to the empty one after the last.
        assert _merged_reads(server) == (3 if oldest_first else 1)
    finally:
        server.stop()


def test_a_merged_listing_page_that_is_not_a_list_is_refused(server, gitcode):
    server.add_pr(head_repo="someone/pytorch", head="x", base="v2.7.1", state="merged")
    gitcode.list_prs("open")  # the kept listing of open PRs is read first
    server.add_fault("GET", r"/pulls$", Fault(status=200, body={"error_code": 500,
                                                                "error_message": "系统繁忙"}))
    with pytest.raises(BackportError) as caught:
        gitcode.later_prs(0, "v2.7.1")
    assert "page 1 answered an object instead of a list" in caught.value.message
    assert TOKEN not in caught.value.message
