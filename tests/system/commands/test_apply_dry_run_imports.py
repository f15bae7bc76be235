"""A dry run of one patch set loads what it plans with and no more: `apply --api put_metric
--dry-run` in a fresh interpreter, on the demo's project with environments that have torch,
imports at most 60 modules of the package, and neither the from-PR flow nor the GitCode client
(the demo's map names the local forge)."""

from __future__ import annotations

from bench.dry_run_imports import dry_run_modules
from tests.helpers.project import TORCH_PYTHON, needs_torch


@needs_torch
def test_a_dry_run_of_put_metric_imports_at_most_60_modules_of_the_package() -> None:
    code, modules = dry_run_modules(TORCH_PYTHON)
    assert code == 0, modules
    assert len(modules) <= 60, f"{len(modules)} modules: {modules}"
    assert not {"backport.pipeline.from_pr", "backport.git.source_pr",
                "backport.forge.gitcode", "backport.forge.http"} & set(modules)
