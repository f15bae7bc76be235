"""PR comments (list, post, edit, delete) and a user's permission on the upstream, on the
GitCode client (against the stand-in on 127.0.0.1) and on the local forge."""

from __future__ import annotations

import pytest

from backport.errors import BackportError
from backport.forge.gitcode import GitCodeForge
from tests.fakes.forge import UPSTREAM
from tests.fakes.gitcode import FakeGitCode


def _source(server: FakeGitCode) -> int:
    return server.add_pr(head_repo=UPSTREAM, head="feature", base="master").number


def test_comments_are_listed_over_every_page_oldest_first(server: FakeGitCode,
                                                          gitcode: GitCodeForge):
    number = _source(server)
    for i in range(105):
        server.add_comment(number, f"c{i}", author="someone")
    listed = gitcode.list_comments(number)
    assert [c.body for c in listed] == [f"c{i}" for i in range(105)]
    assert listed[0].author == "someone"
    pages = [r.query.get("page") for r in server.requests if r.path.endswith("/comments")]
    assert pages[:2] == ["1", "2"]  # the second page read: 105 comments, 100 a page


def test_a_comment_is_posted_once_and_read_back(server: FakeGitCode, gitcode: GitCodeForge):
    number = _source(server)
    posted = gitcode.post_comment(number, "hello")
    assert posted.body == "hello" and posted.author == server.login
    methods = [r.method for r in server.requests if "/comments" in r.path]
    assert methods[0] == "POST" and methods.count("POST") == 1 and "GET" in methods[1:]
    assert posted.id == str(server.prs[number].comments[0]["note_id"])


def test_an_edit_is_checked_and_sent_form_encoded_when_json_did_not_take(
        server: FakeGitCode, gitcode: GitCodeForge):
    number = _source(server)
    note = server.add_comment(number, "old")
    server.json_comment_ignored = True  # the documented formData body is what takes
    edited = gitcode.edit_comment(number, note["id"], "new")
    assert edited.body == "new" and server.prs[number].comments[0]["body"] == "new"
    patches = [r for r in server.requests if r.method == "PATCH"]
    assert [r.path for r in patches] == [f"/repos/{UPSTREAM}/pulls/comments/{note['id']}"] * 2
    assert patches[1].body == {"body": "new"}


@pytest.mark.parametrize("answer", ["404", "405"])
def test_an_edit_the_service_refuses_is_an_error(server: FakeGitCode, gitcode: GitCodeForge,
                                                 answer: str):
    number = _source(server)
    note = server.add_comment(number, "old")
    server.comment_edit = answer
    with pytest.raises(BackportError) as caught:
        gitcode.edit_comment(number, note["id"], "new")
    assert answer in caught.value.message
    assert server.prs[number].comments[0]["body"] == "old"


def test_a_comment_is_deleted(server: FakeGitCode, gitcode: GitCodeForge):
    number = _source(server)
    note = server.add_comment(number, "mine")
    gitcode.delete_comment(number, note["id"])
    assert server.prs[number].comments == []


def test_permission_is_read_and_a_stranger_has_none(server: FakeGitCode, gitcode: GitCodeForge):
    server.permissions = {"maintainer1": "admin", "reader1": "read"}
    assert gitcode.permission("maintainer1") == "admin"
    assert gitcode.permission("reader1") == "read"
    assert gitcode.permission("stranger") == "none"


