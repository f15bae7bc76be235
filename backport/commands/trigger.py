"""`backport trigger`: its options; the work is `backport/trigger.py` `act`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from backport.commands.common import AppContext, echo, pass_app
from backport.pipeline.session import ApplyOptions, Session
from backport.trigger import act


@click.command("trigger")
@click.option("--event", "event_file", type=click.Path(path_type=Path, dir_okay=False),
              default=None, metavar="FILE",
              help="The CI's event (JSON); default $ATOMGIT_EVENT_PATH.")
@click.option("--plan", is_flag=True,
              help="The pipeline's first job: check the permission, answer a refused request and "
                   "name the branches asked for (branches=,B1,B2, on stdout and $ATOMGIT_OUTPUT).")
@click.option("--branch", default=None, metavar="B",
              help="Do only target B, when it was asked for (a branch job after --plan: the "
                   "permission is checked again, nobody is answered).")
@click.option("--prepare", is_flag=True,
              help="With --branch: only make the set of the PR (api=pr-N on stdout and "
                   "$ATOMGIT_OUTPUT), for `apply --no-push` in a step without the token.")
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
    project = app.project()

    def backport(session: Session, number: int, targets: list[str]) -> None:
        from backport.commands import apply  # the plan, a reply and a no-op never load it

        app.resumable()
        apply.run(app, (), (number,), ApplyOptions(branches=tuple(targets),
                                                   skip_tests=skip_tests), session=session)

    act(project, event_file, os.environ, plan=plan, branch=branch, prepare=prepare,
        skip_tests=skip_tests, patches=app.patches or project.root / "patches", say=echo,
        warn=lambda line: echo(line, err=True), backport=backport)
