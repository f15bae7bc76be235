"""`Forge.current_user()`: the token's login, asked once (`GET /user`); a fork left to the token
is `<login>/<upstream's repo name>` in every forge."""

from __future__ import annotations

import pytest

from backport.errors import BackportError
from backport.forge.dryrun import DryRunForge
from backport.forge.gitcode import GitCodeForge
from tests.fakes.gitcode import FakeGitCode

TOKEN = "gct-current-user-0123456789"


@pytest.fixture
def server():
    fake = FakeGitCode(tokens={TOKEN}, upstream="Ascend/pytorch", fork="li-lei/pytorch",
                       login="li-lei")
    fake.start()
    yield fake
    fake.stop()


def test_gitcode_asks_who_the_token_is_once_and_names_the_fork(server: FakeGitCode) -> None:
    forge = GitCodeForge(server.url, "Ascend/pytorch", "", TOKEN, settle=0.0)
    assert forge.current_user() == "li-lei"
    assert forge.fork == "li-lei/pytorch"
    forge.preflight()  # the fork it checks is the login's
    forge.push_credentials("https://gitcode.com/li-lei/pytorch.git")
    assert [r.path for r in server.requests].count("/user") == 1
    assert "/repos/li-lei/pytorch" in [r.path for r in server.requests]


def test_gitcode_without_a_token_asks_nobody(server: FakeGitCode) -> None:
    forge = GitCodeForge(server.url, "Ascend/pytorch", "", None)
    with pytest.raises(BackportError, match="No GitCode token") as info:
        forge.current_user()
    assert info.value.code == "auth" and server.requests == []


def test_a_dry_forge_without_a_token_shows_the_fork_as_the_tokens(server: FakeGitCode) -> None:
    plan: list[str] = []
    dry = DryRunForge(None, plan.append, upstream="Ascend/pytorch", fork="", name="gitcode")
    assert dry.current_user() == "" and dry.fork == "<token's login>/pytorch"
    dry.create_pr("b", "master", "t", "body")
    assert "head=<token's login>/pytorch:b base=master" in plan[-1]
    inner = GitCodeForge(server.url, "Ascend/pytorch", "", TOKEN)
    assert DryRunForge(inner, plan.append, upstream="Ascend/pytorch", fork="").fork == \
        "li-lei/pytorch"


