"""Where the host refuses namespaces: the run says so once, its results say ISOLATION=none,
and `trigger`'s check refuses PR tests unless the environment says `isolation: none`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from backport.config import load_branch_map
from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.demo.sandbox import Sandbox
from backport.envs import sandbox as sandbox_module
from backport.envs.probe import probe
from backport.envs.runner import TestRunner as Runner
from backport.errors import BackportError
from tests.helpers.plain_patch import add_plain_patch_set
from tests.helpers.project import needs_torch, pr_body, run_cli, sandbox  # noqa: F401 - fixture

MAP = """\
forge: local
upstream: a/b
fork: c/b
upstream_url: /srv/up.git
fork_url: /srv/fork.git
environments:
  bare: {{python: {python}, isolation: none}}
  strict: {{python: {python}}}
branches:
  v1: {{env: bare}}
  master: {{env: strict}}
"""


def test_a_run_without_namespaces_is_marked(refusing_host: None, plain_env: Environment,
                                            tmp_path: Path) -> None:
    found = sandbox_module.isolation()
    assert not found.isolated and "BACKPORT_SANDBOX_REFUSE" in found.why
    notice = sandbox_module.refusal_notice()
    assert notice is not None and "refuses PID namespaces" in notice
    assert sandbox_module.refusal_notice() is None  # said once
    worktree = tmp_path / "wt"
    (worktree / "test").mkdir(parents=True)
    (worktree / "test" / "test_ok.py").write_text("print('Ran 1 test')\n", encoding="utf-8")
    with Runner(plain_env, probe(plain_env), device="none") as runner:
        run = runner.run(worktree, Spec("test/test_ok.py"), tmp_path / "ok.log")
    assert run.exit_code == 0 and run.isolation == "none"


def test_trigger_check_needs_isolation_none_where_the_host_refuses(
        refusing_host: None, tmp_path: Path) -> None:
    config = tmp_path / "branches.yaml"
    config.write_text(MAP.format(python=sys.executable), encoding="utf-8")
    bm = load_branch_map(config, environ={})
    sandbox_module.require_isolation(bm, ["v1"])  # its environment accepts no isolation
    with pytest.raises(BackportError) as info:
        sandbox_module.require_isolation(bm, ["v1", "master"])
    assert info.value.code == "config"
    assert "strict" in info.value.message and "isolation: none" in info.value.message
    assert "bare" not in info.value.message


def test_trigger_check_passes_where_the_host_isolates(tmp_path: Path) -> None:
    sandbox_module.forget()
    if not sandbox_module.isolation().isolated:
        pytest.skip("this host refuses PID namespaces")
    config = tmp_path / "branches.yaml"
    config.write_text(MAP.format(python=sys.executable), encoding="utf-8")
    sandbox_module.require_isolation(load_branch_map(config, environ={}), ["v1", "master"])


@needs_torch
def test_apply_on_a_refusing_host_says_so_once_and_in_the_evidence(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        tmp_path: Path) -> None:
    # The patch's test is a plain one over torch (the harness is not the subject: plain_patch).
    add_plain_patch_set(sandbox, tmp_path, "plain_torch", ["master"])
    monkeypatch.setenv("BACKPORT_SANDBOX_REFUSE", "1")
    bare = run_cli(sandbox.project, "apply", "--api", "plain_torch", "--branch", "master")
    assert bare.code == 0, bare.err
    assert (bare.out + bare.err).count("no sandbox for tests") == 1
    assert "ISOLATION=none" in pr_body(sandbox.project, "master").splitlines()
    # Where the host isolates again, the next run's worker is sandboxed.
    monkeypatch.delenv("BACKPORT_SANDBOX_REFUSE")
    sandbox_probe = sandbox_module.isolation()
    if not sandbox_probe.isolated:
        pytest.skip(f"this host refuses PID namespaces: {sandbox_probe.why}")
    again = run_cli(sandbox.project, "apply", "--api", "plain_torch", "--branch",
                    "master", "--force")
    assert again.code == 0, again.err
    assert "no sandbox for tests" not in again.out + again.err
    assert "ISOLATION=" not in pr_body(sandbox.project, "master")
