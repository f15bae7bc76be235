"""`backport preview`: render PR bodies without touching any forge."""

from __future__ import annotations

import dataclasses

import click

from backport.commands.common import AppContext, echo, pass_app
from backport.pipeline.journal import Journal, select_patch_sets, select_targets
from backport.pipeline.session import Session
from backport.records import BranchRecord
from backport.report.body import BodyContext, render_body


@click.command("preview")
@click.option("--api", "api", required=True, metavar="NAME", help="The patch set.")
@click.option("--branch", "branches", multiple=True, metavar="B",
              help="The PR's target branch; repeatable. Default: every target, each body "
                   "after a `<!-- backport:preview B -->` line.")
@pass_app
def preview_cmd(app: AppContext, api: str, branches: tuple[str, ...]) -> None:
    """Print the PR body `apply` would write, from the last run's results.

    With one --branch the body alone is printed, ready to paste.
    """
    project = app.project()
    (ps,) = select_patch_sets(project, [api])
    targets = select_targets([ps], branches)[ps.name]
    bm = project.branch_map
    if not bm.fork:  # no forge is asked: the fork is named as the token's login will give it
        bm = dataclasses.replace(bm, fork=bm.fork_shown)
    journal = Journal.load(project.state_dir, ps.name, ps.api, persist=False)
    records = [journal.get(t) or BranchRecord(t, ps.fork_branch(bm, t)) for t in ps.branches]
    docs = Session(project).docs(ps.api)
    for target in targets:
        body = render_body(BodyContext(branch_map=bm, patch_set=ps, branches=records,
                                       target=target, docs=docs))
        echo(body if len(targets) == 1 else f"<!-- backport:preview {target} -->\n{body}")
