"""`backport new`: a patch set from commits (`git/patch_export.py`) or from a PR
(`pipeline/from_pr.py`), written whole (`write_patch_set`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from backport.commands.common import AppContext, echo, pass_app
from backport.config.patch_set import patch_set_name_problem
from backport.errors import BackportError
from backport.git.patch_export import first_subject, test_files, touched_files
from backport.pipeline.from_pr import read_source, write_from_pr, write_patch_set
from backport.pipeline.session import Session


def _ask(value: str | None, prompt: str, option: str) -> str:
    """``value``, else the answer at the terminal prompt (off a terminal `new` refused already)."""
    if value:
        return value
    try:
        return click.prompt(prompt)
    except click.exceptions.Abort as exc:  # click turns both EOF and Ctrl-C into Abort
        if isinstance(exc.__context__, EOFError):
            raise BackportError("usage", f"input ended at the {option} prompt, so no patch set "
                                f"was written; pass {option}") from None
        raise


def _required_off_terminal(**given: object) -> None:
    """Off a terminal nothing can be asked: name every missing option at once."""
    missing = [f"--{name}" for name, value in given.items() if not value]
    if missing and not sys.stdin.isatty():
        verb = "is" if len(missing) == 1 else "are"
        raise BackportError("usage", f"{' and '.join(missing)} {verb} required off a terminal")


@click.command("new")
@click.argument("name")
@click.option("--from", "rev", default=None, metavar="REV[..REV]",
              help="One commit, or a range A..B, to export with git format-patch.")
@click.option("--from-pr", "pr", type=click.IntRange(min=1), default=None, metavar="N",
              help="A PR of the upstream instead: what it merged onto its base (or, while open, "
                   "its own commits), for every target but its base.")
@click.option("--repo", "repo", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Repository holding the commits.")
@click.option("--api", "api", default=None, metavar="FULL.NAME",
              help="The API the tests cover (asked for at a terminal; required off a terminal; "
                   "--from-pr takes the one the PR body names, else none).")
@click.option("--issue", "issue", type=click.IntRange(min=1), default=None,
              help="Upstream issue every PR links to (asked for at a terminal; required off a "
                   "terminal; --from-pr links every issue the PR links, none or several).")
@click.option("--title", "title", default=None,
              help="PR title (default: first commit's subject; with --from-pr the PR's title).")
@click.option("--force", is_flag=True, help="Replace an existing patch set of that name.")
@pass_app
def new_cmd(app: AppContext, name: str, rev: str | None, pr: int | None, repo: Path,
            api: str | None, issue: int | None, title: str | None, force: bool) -> None:
    """Create patches/NAME/ from commits: numbered patches plus a patch.yaml.

    The tests are the test files the commits touch, the title the first commit's subject;
    `device: npu` is inferred (and said) when a test imports torch_npu or makes npu tensors.

    With --from-pr N the commits come from PR N of the upstream: a merged PR's commit on its
    base (its merge_commit_sha, else the squash commit naming !N), an open PR's own commits.
    The title, issues and API are the PR's (its linked issues, the API its body names, if
    any); nothing is asked. The targets are all but its base.

    \b
    Example:
      backport new put_metric --from 7519b4613 --repo ~/src/pytorch \\
        --api torch.distributed.elastic.metrics.put_metric --issue 3216
      backport new put_metric --from-pr 42810
    """
    if (rev is None) == (pr is None):
        raise BackportError("usage", "pass one of --from REV and --from-pr N")
    problem = patch_set_name_problem(name)
    if problem:
        raise BackportError("usage", problem)
    project = app.project()
    dest = (app.patches or project.root / "patches") / name
    if dest.exists() and not force:
        raise BackportError("usage", f"patch set {dest} already exists; pass --force to replace it")
    repo_given = click.get_current_context().get_parameter_source("repo") is not (
        click.core.ParameterSource.DEFAULT)
    if pr is not None:  # the API and the issue may come from the PR: asked for only if not
        if repo_given:
            raise BackportError("usage", "--repo names the clone --from reads; --from-pr reads "
                                         "PR N and its commits from the map's upstream")
        session = Session(project)
        write_from_pr(session, dest, read_source(session, pr), api=api,
                      issues=(issue,) if issue else (), title=title, say=echo)
        echo(f"next: backport check --api {name}")
        return
    assert rev is not None
    if not repo.is_dir():
        raise BackportError("usage", f"--repo {repo}: no such folder; name the clone that holds "
                                     f"the commits of --from {rev}")
    _required_off_terminal(api=api, issue=issue)
    try:
        tests = test_files(touched_files(repo, rev))
    except BackportError as exc:  # an error naming the default --repo: say it is this folder
        here = os.path.abspath(repo)
        if repo_given or here not in exc.message:
            raise
        raise BackportError(exc.code, exc.message.replace(here, f"{here} (the current folder)", 1)
                            + "; pass --repo PATH naming the clone that holds the commits") from None
    if not tests:
        raise BackportError("usage", f"the commits {rev} touch no test file; a patch set needs one")
    api = _ask(api, "API (e.g. torch.distributed.elastic.metrics.put_metric)", "--api")
    issue_no = int(_ask(str(issue) if issue else None, "Upstream issue number", "--issue"))
    dest = write_patch_set(project, dest, repo, rev, tests, {
        "api": api, "issue": issue_no, "title": title or first_subject(repo, rev)}, echo)
    echo(f"next: backport check --api {name}")
