"""Links point at the forge the map names, and an environment is "shared with" only branches
of the patch set at hand (a set made from a PR on master has no master branch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.config import load_branch_map
from backport.pipeline.steps import env_evidence
from backport.report.body import evidence_text
from tests.helpers.report_fixtures import context, records

MAP = """forge: {forge}
upstream: Ascend/pytorch
{urls}environments:
  e1: {{python: /py}}
branches:
  v2.11.0: {{env: e1}}
  v2.12.0: {{env: e1}}
  master: {{env: e1}}
"""
LOCAL_URLS = "upstream_url: /srv/up.git\nfork: lgxxx/pytorch\nfork_url: /srv/fork.git\n"


def _map(tmp_path: Path, forge: str):
    path = tmp_path / "branches.yaml"
    path.write_text(MAP.format(forge=forge, urls=LOCAL_URLS if forge == "local" else ""),
                    encoding="utf-8")
    return load_branch_map(path, environ={})


@pytest.mark.parametrize("forge, url", [
    ("gitcode", "https://gitcode.com/Ascend/pytorch/pull/1"),
    ("local", "local://Ascend/pytorch/pull/1"),
])
def test_a_source_pr_links_to_the_forge_of_the_map(tmp_path: Path, forge: str, url: str) -> None:
    assert _map(tmp_path, forge).pr_url(1) == url


def test_shared_with_names_only_the_sets_branches(tmp_path: Path) -> None:
    bm = _map(tmp_path, "gitcode")
    evidence = env_evidence(bm, "e1", None, "", False, among=("v2.11.0", "v2.12.0"))
    assert evidence.shared_with == ("v2.11.0", "v2.12.0")
    every = env_evidence(bm, "e1", None, "", False, among=tuple(bm.targets))
    assert every.shared_with == ("v2.11.0", "v2.12.0", "master")


def test_a_branch_that_did_not_run_in_the_environment_is_not_named_as_sharing_it() -> None:
    """master conflicted (no probe, no test): v2.12.0's evidence shares its environment with
    nobody, as the body's prose says."""
    recs = records()
    assert "ENVIRONMENT=torch-2.12.0 (shared with master)" in evidence_text(
        *_view(context("v2.12.0", recs=recs)))
    master = next(r for r in recs if r["target"] == "master")
    master.update(status="conflict", test=None, env=None, commit=None, pushed_sha=None, pr=None)
    lines = evidence_text(*_view(context("v2.12.0", recs=recs))).splitlines()
    assert "ENVIRONMENT=torch-2.12.0" in lines


def _view(ctx):
    (view,) = [b for b in ctx.branches if b.target == ctx.target]
    return view, ctx
