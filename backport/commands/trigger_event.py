"""The CI event `backport trigger` reads, in the shape of the forge the map names: GitCode's PR
comment (``pull_request_comment`` / ``pr_comment``: ``action``, ``comment``, ``pull_request``)
or PR event (merged, or anything else). The local forge stands in for GitCode and reads the same
shape. Any other forge's payload (GitHub's ``issue_comment``: ``issue.pull_request``, or a
github.com address) is refused in one sentence: a login of another forge is never checked
against this one's collaborators."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backport.errors import BackportError
from backport.numerals import MAX_DIGITS, json_number, parse_int

COMMAND = "/backport"
CREATED = "created"  # GitCode's comment events: created | edited | deleted
EVENT_FORGES = ("gitcode", "local")  # the forges whose payloads are read (GitCode's shape)
EVENT_VARIABLES = ("ATOMGIT_EVENT_PATH",)
MAX_EVENT_BYTES = 1 << 20  # GitCode's events are a few KiB; a comment body is bounded
MAX_EVENT_DEPTH = 64


@dataclass(frozen=True)
class TriggerEvent:
    """What the event says: the PR's number, and the comment when it is a comment."""

    number: int
    comment: str | None  # None: not a comment event
    login: str  # who wrote the comment ("" for a PR event)
    comment_id: str  # the comment's id, else a digest of login and body ("" for a PR event)
    merged: bool  # the payload says the PR is merged (a PR event)
    action: str = ""  # the payload's ``action`` ("created", "edited", "deleted", "merge", …)

    @property
    def created(self) -> bool:
        """A comment event that is the comment's creation (edits and deletions never act)."""
        return self.comment is not None and self.action == CREATED

    @property
    def asks(self) -> bool:
        """The comment is a ``/backport`` command."""
        return self.comment is not None and is_request(self.comment)


def is_request(body: str) -> bool:
    """The one rule for a request, when it is written and at the merge: the comment's first
    word is exactly ``/backport``."""
    first = body.strip().split(maxsplit=1)
    return bool(first) and first[0] == COMMAND


def requested(body: str) -> tuple[str, ...]:
    """The branches a ``/backport`` comment names on its first line (none: every target)."""
    words = body.strip().splitlines()[0].split()[1:]
    return tuple(dict.fromkeys(w.strip(",，") for w in words if w.strip(",，")))


def event_path(given: Path | None, environ: Mapping[str, str] = os.environ) -> Path:
    """``--event``, else GitCode's event file (``$ATOMGIT_EVENT_PATH``)."""
    if given is not None:
        return given
    for name in EVENT_VARIABLES:
        if environ.get(name):
            return Path(environ[name])
    raise BackportError("usage", "no event file: give --event FILE, or run where "
                                 f"{' or '.join('$' + n for n in EVENT_VARIABLES)} names one")


def _obj(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> int | None:
    number = json_number(value)  # the one bounded parser: at most 10 digits
    return number if number else None


def _depth(data: Any) -> int:
    """How deep ``data`` nests (a scalar: 0), walked without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        children = (value.values() if isinstance(value, dict)
                    else value if isinstance(value, list) else None)
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _load(path: Path) -> Any:
    """The JSON in ``path``, at most ``MAX_EVENT_BYTES`` and ``MAX_EVENT_DEPTH`` deep; one
    sentence (exit 2) otherwise."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_EVENT_BYTES + 1)
    except OSError as exc:
        raise BackportError("usage", f"cannot read the event file {path}: "
                                     f"{exc.strerror or exc}") from None
    if len(raw) > MAX_EVENT_BYTES:
        raise BackportError("usage", f"the event file {path} is larger than 1 MiB, more than "
                                     "any event of the forge holds")
    too_deep = BackportError("usage", f"the event file {path} nests deeper than "
                                      f"{MAX_EVENT_DEPTH} levels, deeper than any event of the "
                                      "forge")
    try:
        data = json.loads(raw.decode("utf-8"), parse_int=parse_int)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:  # UnicodeDecodeError among them
        raise BackportError("usage", f"the event file {path} is not JSON ({exc})") from None
    if _depth(data) > MAX_EVENT_DEPTH:
        raise too_deep
    return data


def _github_shaped(data: Mapping[str, Any]) -> str:
    """What marks ``data`` as GitHub's payload ("" when nothing does)."""
    issue = _obj(data, "issue")
    if "pull_request" not in data and isinstance(issue.get("pull_request"), dict):
        return "issue.pull_request (GitHub's issue_comment)"
    for key in ("repository", "pull_request", "comment", "issue", "sender"):
        url = _obj(data, key).get("html_url")
        if isinstance(url, str) and url.lower().startswith(("https://github.com/",
                                                            "http://github.com/")):
            return f"{key}.html_url on github.com"
    return ""


def read_event(path: Path, forge: str = "gitcode") -> TriggerEvent:
    """The event in ``path``, read as ``forge``'s payload; a payload of another forge, one
    without a PR number, or a comment event with an empty comment, is refused in one sentence
    (exit 2)."""
    data = _load(path)
    if not isinstance(data, dict):
        raise BackportError("usage", f"the event file {path} does not hold a JSON object")
    if forge not in EVENT_FORGES:
        raise BackportError("usage", f"backport trigger reads the events of "
                                     f"{' and '.join(EVENT_FORGES)} only, not of forge {forge}")
    other = _github_shaped(data)
    if other:
        raise BackportError("usage", f"the event in {path} is GitHub's ({other}), but the map "
                                     f"names the {forge} forge, whose events alone are read")
    pr = _obj(data, "pull_request")
    given = pr.get("number", pr.get("iid"))
    number = _number(given)
    if number is None:
        said = ("no pull_request.number" if given in (None, "") else
                f"pull_request.number is not a PR number of at most {MAX_DIGITS} digits")
        raise BackportError("usage", f"the event in {path} names no PR ({said}), so there is "
                                     "nothing to backport")
    action = str(data.get("action") or "").strip().lower()
    if "comment" not in data:
        merged = (pr.get("merged") in (True, "true") or action == "merge"
                  or str(pr.get("state", "")).lower() == "merged")
        return TriggerEvent(number, None, "", "", merged, action)
    comment = _obj(data, "comment")
    body = comment.get("body")
    if not isinstance(body, str) or not body.strip():
        raise BackportError("usage", f"the comment in the event {path} (PR !{number}) is empty, "
                                     "so it asks for nothing")
    login = _obj(comment, "user").get("login")
    if not isinstance(login, str) or not login.strip():
        raise BackportError("usage", f"the comment in the event {path} (PR !{number}) names no "
                                     "author (comment.user.login), so its permission cannot be "
                                     "checked")
    ident = str(comment.get("id") or "").strip() or hashlib.sha256(
        f"{login}\n{body}".encode()).hexdigest()[:16]
    return TriggerEvent(number, body, login.strip(), ident, False, action)
