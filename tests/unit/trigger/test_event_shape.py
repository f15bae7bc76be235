"""The event `backport trigger` reads: only the payloads of the forge the map names, only a
created comment, and one rule for what a request is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backport.commands.trigger import plan_value
from backport.commands.trigger_event import is_request, read_event
from backport.errors import BackportError

COMMENT = {"id": 1, "body": "/backport v2.12.0", "user": {"login": "octocat"}}


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("payload", [
    {"action": "created", "issue": {"number": 5, "pull_request": {}}, "comment": COMMENT},
    {"action": "created", "pull_request": {"number": 5}, "comment": COMMENT,
     "repository": {"html_url": "https://github.com/Ascend/pytorch"}},
], ids=["issue_comment", "github-address"])
def test_a_github_payload_for_a_gitcode_map_is_refused(tmp_path, payload):
    path = _write(tmp_path, payload)
    with pytest.raises(BackportError) as caught:
        read_event(path, "gitcode")
    assert caught.value.code == "usage"
    assert "GitHub" in caught.value.message and str(path) in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(("action", "created"), [("created", True), ("edited", False),
                                                 ("deleted", False), ("", False)])
def test_only_a_created_comment_is_one(tmp_path, action, created):
    payload = {"pull_request": {"number": 5}, "comment": COMMENT,
               **({"action": action} if action else {})}
    event = read_event(_write(tmp_path, payload), "gitcode")
    assert event.asks and event.created is created


@pytest.mark.parametrize(("body", "asks"), [
    ("/backport", True), ("  /backport v2.7.1\nthanks", True), ("/backport-later", False),
    ("/backporting v2.7.1", False), ("please /backport", False), ("/Backport", False)])
def test_one_rule_for_a_request(body, asks):
    assert is_request(body) is asks


def test_the_plan_names_branches_so_a_job_can_test_for_its_own():
    assert plan_value([]) == ""
    value = plan_value(["v2.12.0", "master"])
    assert ",v2.12.0," in value and ",master," in value and ",v2.1," not in value
