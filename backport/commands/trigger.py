"""`backport trigger`: `/backport` from the PR page, run by the CI on a comment or a merge.

A `/backport [B…]` comment from a user with write permission on the upstream asks for the
named targets (none: every target but the PR's base). On a merged PR the from-PR flow runs
(`apply --from-pr N`, only ``--branch B`` when given and asked for, so each matrix job does its
own branch); on an open PR the request is acknowledged on the PR and the merge event runs it,
reading the requests again from the PR's comments. Anyone else, or a branch that is not a
target, gets one reply (found again by a hidden marker, so matrix jobs never reply twice).
The summary comment of the from-PR flow is the answer the commenter reads.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from backport.commands.apply import apply_cmd
from backport.commands.common import AppContext, echo, pass_app
from backport.commands.trigger_event import COMMAND, TriggerEvent, event_path, read_event, requested
from backport.config.model import Project
from backport.envs.sandbox import require_isolation
from backport.errors import EXIT_OK, BackportError
from backport.forge import Forge
from backport.forge.base import WRITE_PERMISSIONS, SourcePrInfo
from backport.forge.factory import make_forge
from backport.pipeline.source_comment import one_comment
from backport.report.inert import inert

REPLY_MARKER = "<!-- backport:reply:{id} -->"


class _Text:
    """A comment's fixed text (whatever the comment found holds)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self, existing: str | None) -> str:
        return self.text


def _reply(forge: Forge, event: TriggerEvent, text: str) -> None:
    """One reply to the event's comment (best effort: a refusal is said, never raised)."""
    marker = REPLY_MARKER.format(id=event.comment_id)
    try:
        one_comment(forge, event.number, marker, _Text(f"{marker}\n{text}\n"))
    except BackportError as exc:
        echo(f"warning: reply on PR !{event.number} not posted: {exc.message}", err=True)


class _Permissions:
    """Users' permissions on the upstream, each read once."""

    def __init__(self, forge: Forge) -> None:
        self.forge = forge
        self.known: dict[str, bool] = {}

    def may_ask(self, login: str) -> bool:
        if login not in self.known:
            self.known[login] = self.forge.permission(login) in WRITE_PERMISSIONS
        return self.known[login]


def _names(targets: list[str]) -> str:
    """Branch names (words of a reader's comment among them) as inert code spans."""
    return "、".join(inert(t, where="span") for t in targets)


def _asked(forge: Forge, project: Project, event: TriggerEvent, info: SourcePrInfo,
           choosable: list[str]) -> list[str] | None:
    """The targets a comment asks for, or None after replying why it is not obeyed."""
    assert event.comment is not None
    upstream = project.branch_map.upstream
    if not _Permissions(forge).may_ask(event.login):
        _reply(forge, event, f"@{event.login} 只有对 `{upstream}` 有写权限（write 及以上）的成员"
                             f"可以用 `{COMMAND}` 请求回合，本次请求未执行。")
        echo(f"{event.login} has no write permission on {upstream}: replied, nothing done")
        return None
    wanted = list(requested(event.comment)) or choosable
    unknown = [w for w in wanted if w not in choosable]
    if unknown:
        _reply(forge, event, f"@{event.login} {_names(unknown)} 不是本 PR 可回合的目标分支"
                             f"（可选：{_names(choosable)}），本次请求未执行。")
        echo(f"{', '.join(unknown)}: not a target of PR !{info.number} (targets: "
             f"{', '.join(choosable)}): replied, nothing done")
        return None
    if info.state == "closed":
        _reply(forge, event, f"@{event.login} 本 PR 未合入即已关闭，没有可回合的改动。")
        echo(f"PR !{info.number} was closed without being merged: replied, nothing done")
        return None
    return wanted


def _recorded(forge: Forge, info: SourcePrInfo, choosable: list[str]) -> list[str]:
    """The targets the PR's `/backport` comments from users with write permission ask for."""
    permissions = _Permissions(forge)
    wanted: dict[str, None] = {}
    for comment in forge.list_comments(info.number):
        if not comment.body.strip().startswith(COMMAND) or not comment.author:
            continue
        names = requested(comment.body)
        if names and not set(names) <= set(choosable):
            continue  # replied to when it was written
        if permissions.may_ask(comment.author):
            wanted.update(dict.fromkeys(names or choosable))
    return [t for t in choosable if t in wanted]


@click.command("trigger")
@click.option("--event", "event_file", type=click.Path(path_type=Path, dir_okay=False),
              default=None, metavar="FILE",
              help="The CI's event (JSON); default $ATOMGIT_EVENT_PATH, else $GITHUB_EVENT_PATH.")
@click.option("--branch", default=None, metavar="B",
              help="Do only target B, when it was asked for (one matrix job per branch).")
@click.option("--skip-tests", is_flag=True, help="As `apply --skip-tests`.")
@click.pass_context
@pass_app
def trigger_cmd(app: AppContext, ctx: click.Context, event_file: Path | None,
                branch: str | None, skip_tests: bool) -> None:
    """Act on a `/backport [B…]` PR comment, or on the merge of a PR that asked for one.

    \b
    Examples (in a CI job):
      backport trigger
      backport trigger --event "$GITHUB_EVENT_PATH" --branch v2.12.0
    """
    event = read_event(event_path(event_file, os.environ))
    project = app.project()
    bm = project.branch_map
    if branch is not None and branch not in bm.targets:
        raise BackportError("usage", f"--branch {branch} is not a target of {bm.path} "
                                     f"(targets: {', '.join(bm.targets)})")
    if event.comment is not None and not event.asks:
        echo(f"the comment on PR !{event.number} is not a {COMMAND} command: nothing to do")
        raise SystemExit(EXIT_OK)
    forge = make_forge(bm, project.state_dir, environ=os.environ)
    for missing in forge.missing():  # the CI secret not given: one sentence, before any request
        raise BackportError("config", f"backport trigger cannot act on PR !{event.number}: "
                                    f"{missing}")
    info = forge.get_source_pr(event.number)
    choosable = [t for t in bm.targets if t != info.base]
    if event.comment is not None:
        targets = _asked(forge, project, event, info, choosable)
        if targets is None:
            raise SystemExit(EXIT_OK)
        if not info.merged:
            _reply(forge, event, f"@{event.login} 已记录回合请求：{_names(targets)}。本 PR 尚未合入，"
                                 "合入后将自动回合，各分支的结果见本 PR 的回合汇总评论。")
            echo(f"PR !{info.number} is not merged yet: the request for {', '.join(targets)} "
                 "is recorded on it; its merge runs it")
            raise SystemExit(EXIT_OK)
    elif not info.merged:
        echo(f"PR !{info.number} is not merged: nothing to do")
        raise SystemExit(EXIT_OK)
    else:
        targets = _recorded(forge, info, choosable)
        if not targets:
            echo(f"PR !{info.number} was merged with no {COMMAND} request: nothing to do")
            raise SystemExit(EXIT_OK)
    if branch is not None:
        if branch not in targets:
            echo(f"{branch} was not asked for on PR !{info.number} "
                 f"({', '.join(targets)}): nothing to do")
            raise SystemExit(EXIT_OK)
        targets = [branch]
    if not skip_tests:
        require_isolation(bm, targets)  # a PR's tests run sandboxed, or where the map allows
    echo(f"PR !{info.number}: backporting to {', '.join(targets)}")
    ctx.invoke(apply_cmd, from_pr=info.number, branches=tuple(targets), skip_tests=skip_tests)
