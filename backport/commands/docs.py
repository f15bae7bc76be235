"""`backport docs`: which docs versions list an API, and its hardware support table."""

from __future__ import annotations

import click

from backport.commands.common import AppContext, pass_app, print_json
from backport.config.model import Project
from backport.docs_audit import DOCS_ROOT, audit_docs, render_docs_table
from backport.errors import BackportError, ConfigError, ErrorCode
from backport.pipeline.session import Session


@click.command("docs")
@click.option("--api", "api", required=True, metavar="FULL.NAME",
              help="Fully qualified API, e.g. torch.distributed.elastic.metrics.put_metric, or a "
                   "patch set's name for its API.")
@click.option("--ref", "ref", default=None, metavar="REF",
              help="Upstream branch whose docs tree is read (default: master).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@pass_app
def docs_cmd(app: AppContext, api: str, ref: str | None, as_json: bool) -> None:
    """Audit docs/zh/api/native_api/pytorch_*/ for an API: listed or not, support marks.

    Reads the upstream docs tree from the repository cache (no checkout).
    """
    project = app.project()
    api = _full_name(api, project)
    branch = ref or "master"
    cache = Session(project).cache
    cache.ensure()
    if not cache.remote_heads([branch]).get(branch):
        raise BackportError(ErrorCode.USAGE, f"branch '{branch}' does not exist in "
                            f"{project.branch_map.upstream_url}; pass --ref")
    sha = cache.fetch([branch])[branch]
    entries = audit_docs(cache.path, sha, api)
    if not entries:
        hint = "" if ref is None else "; the docs are kept on master: pass --ref master or no --ref"
        raise BackportError(ErrorCode.USAGE, f"branch '{branch}' ({sha[:9]}) of "
                            f"{project.branch_map.upstream_url} has no docs tree "
                            f"{DOCS_ROOT}/pytorch_*/, so there is nothing to audit{hint}")
    if as_json:
        print_json({"api": api, "ref": branch, "commit": sha,
                    "versions": [e.to_dict() for e in entries]})
    else:
        render_docs_table(entries, app.console)


def _full_name(api: str, project: Project) -> str:
    """``api`` itself when fully qualified; a patch set's name stands for that patch set's API."""
    if "." in api.strip("."):
        return api
    if api in project.patch_sets:
        named = project.patch_sets[api].api
        if named is None:
            raise BackportError(ErrorCode.USAGE, f"patch set '{api}' names no API (it was made "
                                                 f"from a PR that names none); pass --api "
                                                 f"FULL.NAME")
        return named
    if api in project.broken:
        raise ConfigError(project.broken[api])
    raise BackportError(ErrorCode.USAGE, f"--api '{api}' is neither a fully qualified API name "
                        f"(module.name, e.g. torch.distributed.elastic.metrics.put_metric) nor a "
                        f"patch set under patches/")
