"""`backport trigger`: `/backport` from the PR page, run by the CI on a comment or a merge.

The event is read in GitCode's shape (the local forge's too); another forge's payload is
refused, its logins never checked against this forge's collaborators. A new comment whose
first word is exactly ``/backport`` (`is_request`), by a user with write permission on the
upstream, asks for the targets it names (none: all but the PR's base); on a merged PR the
from-PR flow runs, on an open one the request is acknowledged and the merge runs it (reading
the requests again from the PR's comments). Anyone else gets one reply. The CI's ``--plan``
job answers and names the branches; each ``--branch B`` job checks again and answers nobody.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backport.config.model import Project
from backport.errors import EXIT_OK, BackportError
from backport.forge import Forge
from backport.forge.base import SourcePrInfo
from backport.numerals import MAX_DIGITS, json_number, parse_int
from backport.pipeline.session import Session, WritePermissions
from backport.report.untrusted import untrusted

COMMAND = "/backport"
EVENT_VARIABLE = "ATOMGIT_EVENT_PATH"
MAX_EVENT_BYTES = 1 << 20  # GitCode's events are a few KiB; a comment body is bounded
MAX_EVENT_DEPTH = 64
MAX_ASKED = 3  # requesters the collaborators listing does not show, asked by login at a merge
Say = Callable[[str], None]


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
    def created(self) -> bool:  # edits and deletions never act
        return self.comment is not None and self.action == "created"

    @property
    def asks(self) -> bool:
        return self.comment is not None and is_request(self.comment)


def is_request(body: str) -> bool:
    """The one rule for a request: the comment's first word is exactly ``/backport``."""
    first = body.strip().split(maxsplit=1)
    return bool(first) and first[0] == COMMAND


def requested(body: str) -> tuple[str, ...]:
    """The branches a ``/backport`` comment names on its first line (none: every target)."""
    words = body.strip().splitlines()[0].split()[1:]
    return tuple(dict.fromkeys(w.strip(",，") for w in words if w.strip(",，")))


def event_path(given: Path | None, environ: Mapping[str, str]) -> Path:
    """``--event``, else GitCode's event file (``$ATOMGIT_EVENT_PATH``)."""
    if given is not None or environ.get(EVENT_VARIABLE):
        return given or Path(environ[EVENT_VARIABLE])
    raise BackportError("usage", "no event file: give --event FILE, or run where "
                                 f"${EVENT_VARIABLE} names one")


def _obj(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:  # {} when not an object
    return data[key] if isinstance(data.get(key), dict) else {}


def _nests_deeper(data: Any, level: int = 1) -> bool:
    """``data`` nests deeper than MAX_EVENT_DEPTH (never recursing further than that)."""
    if not isinstance(data, dict | list):
        return False
    children = data.values() if isinstance(data, dict) else data
    return level > MAX_EVENT_DEPTH or any(_nests_deeper(child, level + 1) for child in children)


def _load(path: Path) -> Any:
    """The JSON in ``path``, bounded in bytes and depth."""
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
                                      f"{MAX_EVENT_DEPTH} levels, deeper than any forge event")
    try:
        data = json.loads(raw.decode("utf-8"), parse_int=parse_int)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:  # UnicodeDecodeError among them
        raise BackportError("usage", f"the event file {path} is not JSON ({exc})") from None
    if _nests_deeper(data):
        raise too_deep
    return data


def _github_shaped(data: Mapping[str, Any]) -> str:
    """What marks ``data`` as GitHub's payload ("" when nothing does)."""
    if "pull_request" not in data and isinstance(_obj(data, "issue").get("pull_request"), dict):
        return "issue.pull_request (GitHub's issue_comment)"
    for key in ("repository", "pull_request", "comment", "issue", "sender"):
        url = _obj(data, key).get("html_url")
        if isinstance(url, str) and url.lower().startswith(("https://github.com/",
                                                            "http://github.com/")):
            return f"{key}.html_url on github.com"
    return ""


def read_event(path: Path, forge: str = "gitcode") -> TriggerEvent:
    """The event in ``path``, read as ``forge``'s payload (else exit 2, one sentence)."""
    data = _load(path)
    if not isinstance(data, dict):
        raise BackportError("usage", f"the event file {path} does not hold a JSON object")
    other = _github_shaped(data)
    if other:
        raise BackportError("usage", f"the event in {path} is GitHub's ({other}), but the map "
                                     f"names the {forge} forge, whose events alone are read")
    pr = _obj(data, "pull_request")
    given = pr.get("number", pr.get("iid"))
    number = json_number(given)  # the one bounded parser: at most 10 digits
    if not number:
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


def plan_value(targets: list[str]) -> str:
    """The plan's output: ``,B1,B2,`` (a job tests ``contains(…, ',B,')``), ``""`` for none."""
    return f",{','.join(targets)}," if targets else ""


def write_output(key: str, value: str, environ: Mapping[str, str], say: Say) -> None:
    """``key=value`` on stdout and as the CI step's output (``$ATOMGIT_OUTPUT``)."""
    if environ.get("ATOMGIT_OUTPUT"):
        with Path(environ["ATOMGIT_OUTPUT"]).open("a", encoding="utf-8") as fh:
            fh.write(f"{key}={value}\n")
    say(f"{key}={value}")


def _replier(forge: Forge, event: TriggerEvent, replies: bool, warn: Say) -> Say:
    """The one reply to the commenter (none in a branch job): best effort, never looked up."""
    def answer(text: str) -> None:
        if replies:
            try:
                forge.add_comment(event.number,
                                  f"<!-- backport:reply:{event.comment_id} -->\n{text}\n")
            except BackportError as exc:
                warn(f"warning: reply on PR !{event.number} not posted: {exc.message}")
    return answer


def _names(targets: list[str]) -> str:  # words of a reader's comment among them
    return "、".join(untrusted(t, where="span") for t in targets)


def _asked(answer: Say, event: TriggerEvent, info: SourcePrInfo, choosable: list[str],
           say: Say) -> list[str] | None:
    """The targets a permitted comment asks for, or None after answering why it is not obeyed."""
    assert event.comment is not None
    wanted = list(requested(event.comment)) or choosable
    unknown = [w for w in wanted if w not in choosable]
    if unknown:
        answer(f"@{event.login} {_names(unknown)} 不是本 PR 可回合的目标分支"
               f"（可选：{_names(choosable)}），本次请求未执行。")
        say(f"{', '.join(unknown)}: not a target of PR !{info.number} (targets: "
            f"{', '.join(choosable)}): nothing done")
        return None
    if info.state == "closed":
        answer(f"@{event.login} 本 PR 未合入即已关闭，没有可回合的改动。")
        say(f"PR !{info.number} was closed without being merged: nothing done")
        return None
    return [t for t in choosable if t in wanted]  # in the map's order


def _recorded(forge: Forge, permissions: WritePermissions, info: SourcePrInfo,
              choosable: list[str], say: Say) -> list[str]:
    """The targets asked for by the PR's requests of users with write permission."""
    requests = []
    for comment in forge.list_comments(info.number):
        if not is_request(comment.body) or not comment.author:
            continue
        names = requested(comment.body)
        if not names or set(names) <= set(choosable):  # else answered when it was written
            requests.append((comment.author, names))
    listed = permissions.listed(forge) if requests else {}
    asked: set[str] = set()
    unread = 0
    wanted: dict[str, None] = {}
    for author, names in reversed(requests):  # the newest first
        if author not in listed and author not in asked:
            if len(asked) >= MAX_ASKED:
                unread += 1
                continue
            asked.add(author)
        if permissions.can_write(forge, author):
            wanted.update(dict.fromkeys(names or choosable))
    if unread:
        say(f"{unread} older {COMMAND} request(s) on PR !{info.number} by users the "
            f"collaborators listing does not show were not read (only the newest "
            f"{MAX_ASKED} such users are asked)")
    return [t for t in choosable if t in wanted]


def requested_targets(session: Session, event: TriggerEvent, *, replies: bool, say: Say,
                      warn: Say) -> list[str]:
    """The branches the event asks to backport now; a commenter's permission is read first."""
    forge, upstream = session.forge.real(), session.project.branch_map.upstream
    answer = _replier(forge, event, replies, warn)
    if event.comment is not None and not session.permissions.can_write(forge, event.login):
        answer(f"@{event.login} 只有对 `{upstream}` 有写权限（write 及以上）的成员"
               f"可以用 `{COMMAND}` 请求回合，本次请求未执行。")
        say(f"{event.login} has no write permission on {upstream}: "
            f"{'replied, ' if replies else ''}nothing done")
        return []
    info = forge.get_source_pr(event.number)
    choosable = [t for t in session.project.branch_map.targets if t != info.base]
    if event.comment is None:
        if not info.merged:
            say(f"PR !{info.number} is not merged: nothing to do")
            return []
        targets = _recorded(forge, session.permissions, info, choosable, say)
        if not targets:
            say(f"PR !{info.number} was merged with no {COMMAND} request: nothing to do")
        return targets
    asked = _asked(answer, event, info, choosable, say)
    if asked is None:
        return []
    if not info.merged:
        answer(f"@{event.login} 已记录回合请求：{_names(asked)}。本 PR 尚未合入，"
               "合入后将自动回合，各分支的结果见本 PR 的回合汇总评论。")
        say(f"PR !{info.number} is not merged yet: the request for {', '.join(asked)} "
            "is recorded on it; its merge runs it")
        return []
    return asked


def act(project: Project, event_file: Path | None, environ: Mapping[str, str], *, plan: bool,
        branch: str | None, prepare: bool, skip_tests: bool, patches: Path, say: Say,
        warn: Say, backport: Callable[[Session, int, list[str]], None]) -> None:
    """The plan's answer, a branch job's set (``prepare``) or ``backport(…)``; else exits 0."""
    from backport.envs.sandbox import require_isolation

    bm = project.branch_map
    if plan and branch is not None:
        raise BackportError("usage", "--plan and --branch are two jobs of the pipeline: give "
                                     "one of them")
    if prepare and branch is None:
        raise BackportError("usage", "--prepare makes the patch set of one branch job: give "
                                     "--branch B with it")
    event = read_event(event_path(event_file, environ), bm.forge)
    if branch is not None and branch not in bm.targets:
        raise BackportError("usage", f"--branch {branch} is not a target of {bm.path} "
                                     f"(targets: {', '.join(bm.targets)})")
    session = Session(project, environ=environ)
    why = ""  # why the event asks for nothing
    if event.comment is not None and not event.created:
        why = (f"the comment event on PR !{event.number} is "
               f"'{event.action or 'without an action'}', not a new comment: ignored")
    elif event.comment is not None and not event.asks:
        why = f"the comment on PR !{event.number} is not a {COMMAND} command: nothing to do"
    elif event.comment is None and not event.merged:
        why = f"the event of PR !{event.number} is no merge: nothing to do"
    if why:
        say(why)
        targets: list[str] = []
    else:
        for missing in session.forge.real().missing():  # the CI secret not given: one sentence
            raise BackportError("config", f"backport trigger cannot act on PR !{event.number}: "
                                        f"{missing}")
        targets = requested_targets(session, event, replies=branch is None, say=say, warn=warn)
    if plan:
        write_output("branches", plan_value(targets), environ, say)
    if plan or not targets:
        raise SystemExit(EXIT_OK)
    if branch is not None:
        if branch not in targets:
            say(f"{branch} was not asked for on PR !{event.number} "
                f"({', '.join(targets)}): nothing to do")
            raise SystemExit(EXIT_OK)
        targets = [branch]
    if not skip_tests:  # a PR's tests run sandboxed, or where the map allows: said before any
        require_isolation(bm, targets)  # set is made (the pipeline's --prepare) or tested
    if prepare:
        from backport.pipeline.from_pr import sets_from_prs

        (name,), _, _ = sets_from_prs(session, patches, (event.number,), say, say)
        write_output("api", name, environ, say)
        raise SystemExit(EXIT_OK)
    say(f"PR !{event.number}: backporting to {', '.join(targets)}")
    backport(session, event.number, targets)
