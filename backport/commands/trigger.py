"""`backport trigger`: `/backport` from the PR page, run by the CI on a comment or a merge.

A newly created `/backport [B…]` comment (the first word exactly `/backport`) from a user with
write permission on the upstream asks for the named targets (none: every target but the PR's
base); an edited or deleted comment never acts. On a merged PR the from-PR flow runs (`apply
--from-pr N`); on an open PR the request is acknowledged and the merge event runs it, reading
the requests again from the PR's comments by the same rule (who may ask read once, from the
collaborators listing: a merge costs a few requests however many readers asked). Anyone else,
or a branch that is not a target, gets one reply.

The pipeline runs it in two kinds of job: ``--plan`` first (the permission checked before any
environment is built or any comment listed; the one reply; the branches asked for, as a CI
output), then one ``--branch B`` job per branch it names, which checks the permission again
and answers nobody. Without either, one host does everything. A job that would test the PR's
code (``--branch``, with or without ``--prepare``) refuses first where the host refuses
namespaces, unless the branch's environment says ``isolation: none``; ``--plan`` runs none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import click

from backport.commands.common import AppContext, echo, pass_app
from backport.commands.trigger_event import (
    COMMAND,
    TriggerEvent,
    event_path,
    is_request,
    read_event,
    requested,
)
from backport.config.model import Project
from backport.envs.sandbox import require_isolation
from backport.errors import EXIT_OK, BackportError
from backport.forge import Forge
from backport.forge.base import SourcePrInfo
from backport.forge.factory import make_forge
from backport.pipeline.writers import Writers
from backport.report.untrusted import untrusted

REPLY_MARKER = "<!-- backport:reply:{id} -->"
OUTPUT_VARIABLE = "ATOMGIT_OUTPUT"  # where GitCode reads a step's outputs
OUTPUT_KEY = "branches"
MAX_ASKED = 3  # requesters the collaborators listing does not show, asked by login at a merge


def plan_value(targets: list[str]) -> str:
    """The branches as the plan's output: ``,B1,B2,`` (a job tests ``contains(…, ',B,')``),
    ``""`` for none."""
    return f",{','.join(targets)}," if targets else ""


class _Answer:
    """Who hears about a request: the commenter (one reply) or nobody (a branch job)."""

    def __init__(self, forge: Forge, event: TriggerEvent, replies: bool) -> None:
        self.forge, self.event, self.replies = forge, event, replies

    def __call__(self, text: str) -> None:
        """One reply to the event's comment, posted once (never looked up: only one job of a
        run replies); best effort, a refusal is said, never raised."""
        if not self.replies:
            return
        marker = REPLY_MARKER.format(id=self.event.comment_id)
        try:
            self.forge.add_comment(self.event.number, f"{marker}\n{text}\n")
        except BackportError as exc:
            echo(f"warning: reply on PR !{self.event.number} not posted: {exc.message}", err=True)


def _names(targets: list[str]) -> str:
    """Branch names (words of a reader's comment among them) as inert code spans."""
    return "、".join(untrusted(t, where="span") for t in targets)


def _asked(answer: _Answer, event: TriggerEvent, info: SourcePrInfo,
           choosable: list[str]) -> list[str] | None:
    """The targets a permitted comment asks for, or None after answering why it is not obeyed."""
    assert event.comment is not None
    wanted = list(requested(event.comment)) or choosable
    unknown = [w for w in wanted if w not in choosable]
    if unknown:
        answer(f"@{event.login} {_names(unknown)} 不是本 PR 可回合的目标分支"
               f"（可选：{_names(choosable)}），本次请求未执行。")
        echo(f"{', '.join(unknown)}: not a target of PR !{info.number} (targets: "
             f"{', '.join(choosable)}): nothing done")
        return None
    if info.state == "closed":
        answer(f"@{event.login} 本 PR 未合入即已关闭，没有可回合的改动。")
        echo(f"PR !{info.number} was closed without being merged: nothing done")
        return None
    return [t for t in choosable if t in wanted]  # in the map's order


def _recorded(forge: Forge, info: SourcePrInfo, choosable: list[str]) -> list[str]:
    """The targets the PR's `/backport` comments from users with write permission ask for
    (the one rule of a request: :func:`is_request`). Who may ask is read once, from the
    collaborators listing; a requester it does not show (a member through an organisation) is
    asked by login, but only the newest ``MAX_ASKED`` of them, and the rest are said: a merge
    costs a few requests however many readers asked."""
    requests = []
    for comment in forge.list_comments(info.number):
        if not is_request(comment.body) or not comment.author:
            continue
        names = requested(comment.body)
        if not names or set(names) <= set(choosable):  # else answered when it was written
            requests.append((comment.author, names))
    writers = Writers()
    listed = writers.listed(forge) if requests else {}
    asked: set[str] = set()
    unread = 0
    wanted: dict[str, None] = {}
    for author, names in reversed(requests):  # the newest first
        if author not in listed and author not in asked:
            if len(asked) >= MAX_ASKED:
                unread += 1
                continue
            asked.add(author)
        if writers.can_write(forge, author):
            wanted.update(dict.fromkeys(names or choosable))
    if unread:
        echo(f"{unread} older {COMMAND} request(s) on PR !{info.number} by users the "
             f"collaborators listing does not show were not read (only the newest "
             f"{MAX_ASKED} such users are asked)")
    return [t for t in choosable if t in wanted]


def _output_file(environ: Mapping[str, str]) -> Path | None:
    return Path(environ[OUTPUT_VARIABLE]) if environ.get(OUTPUT_VARIABLE) else None


def _planned(targets: list[str], environ: Mapping[str, str]) -> None:
    """The plan's answer: the branches asked for, on stdout and as the CI step's output."""
    value = plan_value(targets)
    out = _output_file(environ)
    if out is not None:
        with out.open("a", encoding="utf-8") as fh:
            fh.write(f"{OUTPUT_KEY}={value}\n")
    echo(f"{OUTPUT_KEY}={value}")
    raise SystemExit(EXIT_OK)


@click.command("trigger")
@click.option("--event", "event_file", type=click.Path(path_type=Path, dir_okay=False),
              default=None, metavar="FILE",
              help="The CI's event (JSON); default $ATOMGIT_EVENT_PATH.")
@click.option("--plan", is_flag=True,
              help="The pipeline's first job: check the permission, answer a refused request "
                   "(one reply) and name the branches asked for (branches=,B1,B2, on stdout "
                   "and in $ATOMGIT_OUTPUT); backports nothing.")
@click.option("--branch", default=None, metavar="B",
              help="Do only target B, when it was asked for (a branch job after --plan: the "
                   "permission is checked again, nobody is answered).")
@click.option("--prepare", is_flag=True,
              help="With --branch: only make the patch set from the PR (patches/pr-N) and name "
                   "it (api=pr-N on stdout and in $ATOMGIT_OUTPUT); the CI then tests it with "
                   "`apply --no-push` in a step without the token, and publishes it.")
@click.option("--skip-tests", is_flag=True, help="As `apply --skip-tests`.")
@pass_app
def trigger_cmd(app: AppContext, event_file: Path | None, plan: bool,
                branch: str | None, prepare: bool, skip_tests: bool) -> None:
    """Act on a `/backport [B…]` PR comment, or on the merge of a PR that asked for one.

    Runs in the folder holding branches.yaml and patches/ (the map repository). Needs the
    token (GITCODE_TOKEN or BACKPORT_TOKEN: a user who may push to the fork and open PRs on the
    upstream) and GitCode's event: the JSON file --event names, else $ATOMGIT_EVENT_PATH.
    Only a newly created comment whose first word is exactly /backport, by a user with write
    permission on the upstream, or a merge event acts (a request it refuses gets one reply);
    other events exit 0 doing nothing.

    \b
    Examples (in a CI job):
      backport trigger --plan
      backport trigger --branch v2.12.0
      backport trigger --event event.json
    """
    if plan and branch is not None:
        raise BackportError("usage", "--plan and --branch are two jobs of the pipeline: give "
                                     "one of them")
    if prepare and branch is None:
        raise BackportError("usage", "--prepare makes the patch set of one branch job: give "
                                     "--branch B with it")
    project = app.project()
    bm = project.branch_map
    event = read_event(event_path(event_file, os.environ), bm.forge)
    if branch is not None and branch not in bm.targets:
        raise BackportError("usage", f"--branch {branch} is not a target of {bm.path} "
                                     f"(targets: {', '.join(bm.targets)})")
    finish = (lambda targets: _planned(targets, os.environ)) if plan else _nothing
    if event.comment is not None and not event.created:
        echo(f"the comment event on PR !{event.number} is "
             f"'{event.action or 'without an action'}', not a new comment: ignored")
        finish([])
    if event.comment is not None and not event.asks:
        echo(f"the comment on PR !{event.number} is not a {COMMAND} command: nothing to do")
        finish([])
    if event.comment is None and not event.merged:
        echo(f"the event of PR !{event.number} is no merge: nothing to do")
        finish([])
    forge = make_forge(bm, project.state_dir, environ=os.environ)
    for missing in forge.missing():  # the CI secret not given: one sentence, before any request
        raise BackportError("config", f"backport trigger cannot act on PR !{event.number}: "
                                    f"{missing}")
    targets = _targets(forge, project, event, replies=branch is None)
    if plan or not targets:
        finish(targets)
    if branch is not None:
        if branch not in targets:
            echo(f"{branch} was not asked for on PR !{event.number} "
                 f"({', '.join(targets)}): nothing to do")
            raise SystemExit(EXIT_OK)
        targets = [branch]
    if not skip_tests:  # a PR's tests run sandboxed, or where the map allows: said before any
        require_isolation(bm, targets)  # set is made (the pipeline's --prepare) or tested
    if prepare:
        _prepared(app, project, event.number)
    echo(f"PR !{event.number}: backporting to {', '.join(targets)}")
    from backport.commands import apply  # the plan, a reply and a no-op never load it
    from backport.pipeline.session import ApplyOptions

    app.resumable()
    apply.run(app, (), (event.number,), ApplyOptions(branches=tuple(targets), skip_tests=skip_tests))


def _prepared(app: AppContext, project: Project, number: int) -> None:
    """Make (or keep) the patch set of PR ``number`` and name it as the step's output."""
    from backport.pipeline.from_pr import sets_from_prs  # only a branch job prepares a set

    (name,), _, _ = sets_from_prs(project, app.patches or project.root / "patches", (number,),
                                  echo, echo)
    out = _output_file(os.environ)
    if out is not None:
        with out.open("a", encoding="utf-8") as fh:
            fh.write(f"api={name}\n")
    echo(f"api={name}")
    raise SystemExit(EXIT_OK)


def _nothing(targets: list[str]) -> None:
    raise SystemExit(EXIT_OK)


def _targets(forge: Forge, project: Project, event: TriggerEvent, *, replies: bool) -> list[str]:
    """The branches the event asks to backport now ([] when none, after the one reply where
    ``replies``). A comment's author's permission is read first, before anything else."""
    answer = _Answer(forge, event, replies)
    upstream = project.branch_map.upstream
    if event.comment is not None and not Writers().can_write(forge, event.login):
        answer(f"@{event.login} 只有对 `{upstream}` 有写权限（write 及以上）的成员"
               f"可以用 `{COMMAND}` 请求回合，本次请求未执行。")
        echo(f"{event.login} has no write permission on {upstream}: "
             f"{'replied, ' if replies else ''}nothing done")
        return []
    info = forge.get_source_pr(event.number)
    choosable = [t for t in project.branch_map.targets if t != info.base]
    if event.comment is None:
        if not info.merged:
            echo(f"PR !{info.number} is not merged: nothing to do")
            return []
        targets = _recorded(forge, info, choosable)
        if not targets:
            echo(f"PR !{info.number} was merged with no {COMMAND} request: nothing to do")
        return targets
    asked = _asked(answer, event, info, choosable)
    if asked is None:
        return []
    if not info.merged:
        answer(f"@{event.login} 已记录回合请求：{_names(asked)}。本 PR 尚未合入，"
               "合入后将自动回合，各分支的结果见本 PR 的回合汇总评论。")
        echo(f"PR !{info.number} is not merged yet: the request for {', '.join(asked)} "
             "is recorded on it; its merge runs it")
        return []
    return asked
