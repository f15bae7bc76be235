"""`backport docs`: which docs versions list an API, and its hardware support table."""

from __future__ import annotations

import click

from backport.commands.common import AppContext, pass_app, print_json
from backport.docs_audit import audit_docs, render_docs_table
from backport.errors import BackportError
from backport.pipeline.session import ApplyOptions, Session


@click.command("docs")
@click.option("--api", "api", required=True, metavar="FULL.NAME",
              help="Fully qualified API, e.g. torch.distributed.elastic.metrics.put_metric.")
@click.option("--ref", "ref", default=None, metavar="REF",
              help="Upstream branch whose docs tree is read (default: master).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@pass_app
def docs_cmd(app: AppContext, api: str, ref: str | None, as_json: bool) -> None:
    """Audit docs/zh/api/native_api/pytorch_*/ for an API: listed or not, support marks.

    Reads the upstream docs tree from the repository cache (no checkout).
    """
    project = app.project()
    branch = ref or "master"
    session = Session(project, ApplyOptions())
    session.cache.ensure()
    heads = session.cache.remote_heads([branch])
    if not heads.get(branch):
        raise BackportError("usage", f"branch '{branch}' does not exist in "
                            f"{project.branch_map.upstream_url}; pass --ref")
    sha = session.cache.fetch([branch])[branch]
    entries = audit_docs(session.cache.path, sha, api)
    if as_json:
        print_json({"api": api, "ref": branch, "commit": sha,
                    "versions": [e.to_dict() for e in entries]})
    else:
        render_docs_table(entries, app.console)
