"""The event `backport trigger` reads: only the payloads of the forge the map names, only a
created comment, and one rule for what a request is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.trigger import is_request, plan_value, read_event

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


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(BackportError) as caught:
        read_event(path, "gitcode")
    message = caught.value.message
    assert caught.value.code == "usage" and caught.value.exit_code == 2
    assert "\n" not in message and str(path) in message
    assert all(word in message for word in words), message
    return message


@pytest.mark.parametrize("raw", ['"' + "9" * 5000 + '"', '"' + "9" * 11 + '"', "9" * 5000],
                         ids=["string", "eleven-digits", "json-integer"])
def test_a_pr_number_of_more_than_ten_digits_is_refused_in_one_sentence(tmp_path, raw):
    path = tmp_path / "event.json"
    path.write_text('{"action": "merge", "pull_request": {"merged": true, "number": '
                    f'{raw}}}}}', encoding="utf-8")
    assert len(_refused(path, "pull_request.number")) < 300  # the digits are not echoed


def test_an_event_file_over_one_mib_is_refused_before_it_is_parsed(tmp_path):
    path = _write(tmp_path, {"action": "created", "pull_request": {"number": 5},
                             "comment": {**COMMENT, "body": "/backport " + "x" * (1 << 20)}})
    _refused(path, "1 MiB")


@pytest.mark.parametrize("depth", [65, 5000])
def test_an_event_nested_deeper_than_64_levels_is_refused(tmp_path, depth):
    path = tmp_path / "event.json"
    nested = "[" * (depth - 1) + "]" * (depth - 1)
    path.write_text(f'{{"pull_request": {{"number": 5}}, "x": {nested}}}', encoding="utf-8")
    _refused(path, "64 levels")


def test_an_event_nested_64_levels_is_read(tmp_path):
    path = tmp_path / "event.json"
    nested = "[" * 63 + "]" * 63
    path.write_text(f'{{"pull_request": {{"number": 5}}, "x": {nested}}}', encoding="utf-8")
    assert read_event(path, "gitcode").number == 5
