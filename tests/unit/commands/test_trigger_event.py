"""The CI event `backport trigger` reads, in GitCode's and GitHub's shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.trigger import event_path, read_event, requested


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_gitcode_merge_and_a_github_closed_merged_event_are_merges(tmp_path):
    gitcode = read_event(_write(tmp_path, {"action": "merge", "pull_request": {
        "number": "42810", "state": "merged"}}))
    assert (gitcode.number, gitcode.comment, gitcode.merged) == (42810, None, True)
    merged = read_event(_write(tmp_path, {"action": "merge", "pull_request": {
        "number": 7, "state": "closed", "merged": True}}))
    assert (merged.number, merged.merged) == (7, True)
    closed = read_event(_write(tmp_path, {"action": "closed", "pull_request": {
        "number": 7, "state": "closed", "merged": False}}))
    assert closed.merged is False


def test_a_comment_without_an_id_is_named_by_its_author_and_text(tmp_path):
    data = {"pull_request": {"number": 3}, "comment": {"body": "/backport", "user": {"login": "m"}}}
    one, two = read_event(_write(tmp_path, data)), read_event(_write(tmp_path, data))
    assert one.comment_id == two.comment_id and one.asks
    data["comment"]["body"] = "/backporting is great"
    assert not read_event(_write(tmp_path, data)).asks


def test_requested_branches_are_the_first_lines_words():
    assert requested("/backport") == ()
    assert requested("/backport v2.7.1, v2.11.0 v2.7.1\nthanks v2.12.0") == ("v2.7.1", "v2.11.0")


def test_the_event_file_comes_from_the_ci(tmp_path):
    assert event_path(None, {"ATOMGIT_EVENT_PATH": "/a", "GITHUB_EVENT_PATH": "/g"}) == Path("/a")
    with pytest.raises(BackportError) as caught:
        event_path(None, {"GITHUB_EVENT_PATH": "/g"})  # GitHub's file is never read
    assert caught.value.code == "usage" and "--event" in caught.value.message


@pytest.mark.parametrize(("text", "says"), [("{", "is not JSON"), ("[1]", "JSON object")])
def test_an_unreadable_event_is_one_sentence(tmp_path, text, says):
    path = tmp_path / "event.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BackportError) as caught:
        read_event(path)
    assert caught.value.code == "usage" and says in caught.value.message
    assert str(path) in caught.value.message
