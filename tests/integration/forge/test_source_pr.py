"""`get_source_pr`: a PR of the upstream read as a backport's source, from GitCode's documented
single-PR and linked-issue answers (stand-in on 127.0.0.1) and from the local forge."""

from __future__ import annotations

import pytest

from backport.errors import BackportError
from backport.forge.gitcode import GitCodeForge
from tests.fakes.gitcode import FakeGitCode

SHA = "1292bcfa165ef69dd3cc3169ec4b1ac51a3b042f"


def test_a_merged_pr_with_its_issues_paged_and_no_merge_sha(server: FakeGitCode,
                                                            gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo="someone/pytorch", head="topic", base="master",
                       title="test: add put_metric coverage", body="API=a.b", state="merged",
                       author="someone")
    pr.issues = list(range(3001, 3026))  # 25: two pages of the documented default 20
    info = gitcode.get_source_pr(pr.number)
    assert (info.number, info.state, info.merged) == (pr.number, "merged", True)
    assert (info.base, info.head, info.author) == ("master", "topic", "someone")
    assert info.title == "test: add put_metric coverage" and info.body == "API=a.b"
    assert info.merge_commit_sha == ""  # the single-PR answer carries none
    assert info.issues == tuple(range(3001, 3026))


def test_merge_commit_sha_is_taken_only_as_a_full_sha(server: FakeGitCode,
                                                      gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo="someone/pytorch", head="topic", base="master",
                       state="merged")
    pr.merge_commit_sha = SHA
    assert gitcode.get_source_pr(pr.number).merge_commit_sha == SHA
    pr.merge_commit_sha = "1292bcfa1"
    assert gitcode.get_source_pr(pr.number).merge_commit_sha == ""


def test_an_open_pr_is_not_merged_and_a_missing_one_is_one_sentence(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo="someone/pytorch", head="topic", base="v2.7.1")
    info = gitcode.get_source_pr(pr.number)
    assert (info.state, info.merged, info.base) == ("open", False, "v2.7.1")
    with pytest.raises(BackportError) as caught:
        gitcode.get_source_pr(99999)
    assert caught.value.message.startswith("GitCode has no PR !99999 in Ascend/pytorch")




