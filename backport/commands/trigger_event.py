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

COMMAND = "/backport"
CREATED = "created"  # GitCode's comment events: created | edited | deleted
EVENT_FORGES = ("gitcode", "local")  # the forges whose payloads are read (GitCode's shape)
EVENT_VARIABLES = ("ATOMGIT_EVENT_PATH",)


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
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BackportError("usage", f"cannot read the event file {path}: "
                                     f"{exc.strerror or exc}") from None
    except ValueError as exc:
        raise BackportError("usage", f"the event file {path} is not JSON ({exc})") from None
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
    number = _number(pr.get("number", pr.get("iid")))
    if number is None:
        raise BackportError("usage", f"the event in {path} names no PR (no pull_request.number), "
                                     "so there is nothing to backport")
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
