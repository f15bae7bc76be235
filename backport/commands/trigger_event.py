"""The CI event `backport trigger` reads: a PR comment (GitCode's ``pull_request_comment`` /
``pr_comment``, GitHub's ``issue_comment``) or a PR event (merged, or anything else)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backport.errors import BackportError

COMMAND = "/backport"
EVENT_VARIABLES = ("ATOMGIT_EVENT_PATH", "GITHUB_EVENT_PATH")


@dataclass(frozen=True)
class TriggerEvent:
    """What the event says: the PR's number, and the comment when it is a comment."""

    number: int
    comment: str | None  # None: not a comment event
    login: str  # who wrote the comment ("" for a PR event)
    comment_id: str  # the comment's id, else a digest of login and body ("" for a PR event)
    merged: bool  # the payload says the PR is merged (a PR event)

    @property
    def asks(self) -> bool:
        """The comment is a ``/backport`` command."""
        return self.comment is not None and is_request(self.comment)


def is_request(body: str) -> bool:
    first = body.strip().split(maxsplit=1)
    return bool(first) and first[0] == COMMAND


def requested(body: str) -> tuple[str, ...]:
    """The branches a ``/backport`` comment names on its first line (none: every target)."""
    words = body.strip().splitlines()[0].split()[1:]
    return tuple(dict.fromkeys(w.strip(",，") for w in words if w.strip(",，")))


def event_path(given: Path | None, environ: Mapping[str, str] = os.environ) -> Path:
    """``--event``, else the CI's event file (``$ATOMGIT_EVENT_PATH``, ``$GITHUB_EVENT_PATH``)."""
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
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def read_event(path: Path) -> TriggerEvent:
    """The event in ``path``; a payload without a PR number, or a comment event with an empty
    comment, is refused in one sentence (exit 2)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BackportError("usage", f"cannot read the event file {path}: "
                                     f"{exc.strerror or exc}") from None
    except ValueError as exc:
        raise BackportError("usage", f"the event file {path} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BackportError("usage", f"the event file {path} does not hold a JSON object")
    pr, issue = _obj(data, "pull_request"), _obj(data, "issue")
    number = _number(pr.get("number", pr.get("iid")))
    if number is None and isinstance(issue.get("pull_request"), dict):  # GitHub, on a PR
        number = _number(issue.get("number"))
    if number is None:
        raise BackportError("usage", f"the event in {path} names no PR (no pull_request.number, "
                                     "nor issue.number of a PR), so there is nothing to backport")
    if "comment" not in data:
        merged = pr.get("merged") in (True, "true") or str(pr.get("state", "")).lower() == "merged"
        return TriggerEvent(number, None, "", "", merged)
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
    return TriggerEvent(number, body, login.strip(), ident, False)
