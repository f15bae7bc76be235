"""`Forge.pr_files`: the files a PR changes, from GitCode's documented `/pulls/{n}/files`
answer (stand-in on 127.0.0.1: one answer, no paging documented) and from the local forge;
and the merge time and author each forge gives for the source proof and the trust rule."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backport.forge import PrFile
from backport.forge.gitcode import GitCodeForge
from backport.forge.http import ApiClient, RateLimiter
from tests.fakes.gitcode import FakeGitCode

TOKEN = "gct-files-0123456789"
UPSTREAM, FORK = "Ascend/pytorch", "lgxxx/pytorch"


@pytest.fixture
def server() -> Iterator[FakeGitCode]:
    fake = FakeGitCode(tokens={TOKEN}, upstream=UPSTREAM, fork=FORK)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def gitcode(server: FakeGitCode) -> GitCodeForge:
    client = ApiClient(server.url, TOKEN, timeout=5.0, sleep=lambda s: None,
                       limiter=RateLimiter(((10_000, 60.0),), sleep=lambda s: None))
    return GitCodeForge(server.url, UPSTREAM, FORK, TOKEN, client=client, settle=0.0,
                        sleep=lambda s: None)


def test_new_changed_renamed_and_deleted_files_as_gitcode_lists_them(
        server: FakeGitCode, gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo="someone/pytorch", head="topic", base="master",
                       state="merged", author="someone")
    many = [(f"test/t{i}/test_x.py", f"test/t{i}/test_x.py") for i in range(23)]  # > 20
    pr.files = [(None, "test/test_new.py"), ("test/test_old.py", "test/test_renamed.py"),
                ("test/test_gone.py", None), *many]
    files = gitcode.pr_files(pr.number)
    assert files[:3] == [PrFile(None, "test/test_new.py"),
                         PrFile("test/test_old.py", "test/test_renamed.py"),
                         PrFile("test/test_gone.py", None)]
    assert files[3:] == [PrFile(a, b) for a, b in many]
    assert server.counts()["GET /repos/Ascend/pytorch/pulls/{n}/files"] == 2  # repeat: the end
    info = gitcode.get_source_pr(pr.number)
    assert info.merged_at == pr.merged_at != ""


def test_the_author_of_a_listed_pr_is_its_login(server: FakeGitCode,
                                                gitcode: GitCodeForge) -> None:
    pr = server.add_pr(head_repo="reader/pytorch", head="cf", base="v2.7.1", body="cf. !1",
                       author="reader")
    (listed,) = [p for p in gitcode.later_prs(0, "v2.7.1") if p.number == pr.number]
    assert listed.author == "reader"


