"""Sample configuration files shared by the config tests."""

from __future__ import annotations

from pathlib import Path

BRANCHES_YAML = """\
forge: local
upstream: Ascend/pytorch
fork: lgxxx/pytorch
fork_branch: "test-{slug}-{target}"
upstream_url: ./sandbox/upstream.git
fork_url: ./sandbox/fork.git
environments:
  torch-2.12.0:
    python: ~/envs/torch-2.12.0/bin/python
    expect: {torch: "2.12.0", torch_npu: "2.12.0.rc1"}
    requirements: ["torch==2.12.0", "torch_npu==2.12.0.rc1", "expecttest"]
  torch-2.7.1:
    venv: envs/torch-2.7.1
    expect: {torch: 2.7.1}
    env: {TORCH_DEVICE_BACKEND_AUTOLOAD: 0, EXTRA: "x y"}
    timeout: 90
branches:
  v2.7.1:  {env: torch-2.7.1}
  v2.11.0: {env: torch-2.12.0}
  v2.12.0: {env: torch-2.12.0}
  master:  {env: torch-2.12.0}
pr:
  labels: [backport, test]
  reviewers: [alice]
  comment: /ci-pytorch
"""

PATCH_YAML = """\
api: torch.distributed.elastic.metrics.put_metric
issue: 3216
title: "test: add put_metric coverage"
tests:
  - path: test/distributed/elastic/metrics/test_metrics_api.py
    args: ["-v"]
device: none
branches: [v2.7.1, v2.11.0, v2.12.0, master]
"""

TEST_FILE = "test/distributed/elastic/metrics/test_metrics_api.py"


def make_patch(path: str = TEST_FILE, *, sha: str = "1" * 40, body: str | None = None) -> str:
    """A small patch in git format-patch form changing ``path`` (or the given diff body)."""
    diff = body or (
        f"diff --git a/{path} b/{path}\n"
        "index 3f8e81ec9..d5b468ecb 100644\n"
        f"--- a/{path}\n"
        f"+++ b/{path}\n"
        "@@ -1,2 +1,3 @@\n"
        " import torch\n"
        "+import unittest\n"
        " \n"
    )
    return (
        f"From {sha} Mon Sep 17 00:00:00 2001\n"
        "From: A U Thor <author@example.com>\n"
        "Date: Thu, 20 Aug 2026 10:30:00 +0800\n"
        "Subject: [PATCH] test: add put_metric coverage\n"
        "\n"
        "Message.\n"
        "---\n"
        f" {path} | 1 +\n"
        "\n"
        f"{diff}"
        "-- \n"
        "2.39.5\n"
        "\n"
    )


def write_project(
    root: Path,
    branches: str = BRANCHES_YAML,
    patch_yaml: str = PATCH_YAML,
    patch: str | None = None,
    name: str = "put_metric",
) -> Path:
    """Write branches.yaml and patches/<name>/ under ``root``; returns the branches.yaml path."""
    config = root / "branches.yaml"
    config.write_text(branches, encoding="utf-8")
    pdir = root / "patches" / name
    pdir.mkdir(parents=True, exist_ok=True)
    (pdir / "patch.yaml").write_text(patch_yaml, encoding="utf-8")
    (pdir / "0001-test-add-put_metric-coverage.patch").write_text(
        patch or make_patch(), encoding="utf-8"
    )
    return config
