"""PR code never runs unconfined: on a host that refuses namespaces (the probe's own switch,
``BACKPORT_SANDBOX_REFUSE=1``), every path that would run a set made from a PR refuses in one
sentence with exit 2, unless the branch's environment says ``isolation: none``; the paths
that run no PR code (the publish step's ``--skip-tests``, ``check``, ``preview``) go on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from backport.demo.sandbox import Sandbox
from backport.envs import sandbox as sandbox_module
from tests.fakes.gitcode import FakeGitCode
from tests.helpers.merged_pr import merged_pr
from tests.helpers.project import TOKEN, edit_config, run_app, run_cli
from tests.helpers.source_pr import source_server

NUMBER = 5130
REFUSAL = "refuses PID namespaces"


@pytest.fixture
def gitcode(sandbox: Sandbox) -> Iterator[FakeGitCode]:
    with source_server(sandbox, NUMBER) as fake:
        fake.permissions = {"maintainer1": "write"}
        merged_pr(sandbox, fake)
        yield fake


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The host refuses namespaces, for this process (probed afresh) and the CLI's."""
    monkeypatch.setenv("BACKPORT_SANDBOX_REFUSE", "1")
    sandbox_module.forget()
    yield {"BACKPORT_SANDBOX_REFUSE": "1"}
    monkeypatch.delenv("BACKPORT_SANDBOX_REFUSE")
    sandbox_module.forget()


def _env(sandbox: Sandbox) -> dict[str, str]:
    return {"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
            "BACKPORT_CACHE": str(sandbox.cache)}


def _event(tmp: Path) -> Path:
    path = tmp / "comment.json"
    path.write_text(json.dumps({"action": "created", "pull_request": {"number": NUMBER},
                                "comment": {"id": 1, "body": "/backport v2.12.0",
                                            "user": {"login": "maintainer1"}}}),
                    encoding="utf-8")
    return path


def _allow_no_isolation(sandbox: Sandbox) -> None:
    def none(data: dict) -> None:
        for env in data["environments"].values():
            env["isolation"] = "none"
    edit_config(sandbox, none)


def _refused(result, sandbox: Sandbox) -> None:
    assert result.code == 2, (result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and REFUSAL in lines[0] and "isolation: none" in lines[0], lines
    journal = sandbox.project / ".backport" / "runs" / f"pr-{NUMBER}" / "journal.json"
    assert not journal.exists()  # no test ran, nothing recorded


def _make_set(sandbox: Sandbox) -> None:
    made = run_app(sandbox.project, "new", f"pr-{NUMBER}", "--from-pr", str(NUMBER),
                   env=_env(sandbox))
    assert made.code == 0, made.err
    assert (sandbox.project / "patches" / f"pr-{NUMBER}" / "patch.yaml").exists()


def test_the_pipelines_prepare_step_refuses_before_making_the_set(sandbox, gitcode, refusing,
                                                                 tmp_path):
    result = run_cli(sandbox.project, "trigger", "--event", str(_event(tmp_path)), "--branch",
                     "v2.12.0", "--prepare", env={**_env(sandbox), **refusing})
    _refused(result, sandbox)
    assert "api=" not in result.out
    assert not (sandbox.project / "patches" / f"pr-{NUMBER}").exists()


def test_apply_from_pr_refuses(sandbox, gitcode, refusing):
    result = run_app(sandbox.project, "apply", "--from-pr", str(NUMBER), "--branch", "v2.12.0",
                     "--no-push", env=_env(sandbox))
    _refused(result, sandbox)


def test_the_pipelines_test_step_on_the_pr_set_refuses(sandbox, gitcode, refusing):
    _make_set(sandbox)
    for reach in ("--no-push", "--dry-run"):
        result = run_app(sandbox.project, "apply", "--api", f"pr-{NUMBER}", "--branch",
                         "v2.12.0", reach, env=_env(sandbox))
        _refused(result, sandbox)


def test_paths_that_run_no_pr_code_go_on(sandbox, gitcode, refusing):
    _make_set(sandbox)
    for args in (("check", "--api", f"pr-{NUMBER}", "--offline"),
                 ("preview", "--api", f"pr-{NUMBER}", "--branch", "v2.12.0"),
                 ("apply", "--api", f"pr-{NUMBER}", "--branch", "v2.12.0", "--no-push",
                  "--skip-tests")):
        result = run_app(sandbox.project, *args, env=_env(sandbox))
        assert REFUSAL not in result.out + result.err, (args, result.err)
        assert result.code == 0, (args, result.out, result.err)


def test_an_environment_saying_isolation_none_is_prepared_where_the_host_refuses(
        sandbox, gitcode, refusing, tmp_path):
    _allow_no_isolation(sandbox)
    result = run_app(sandbox.project, "trigger", "--event", str(_event(tmp_path)), "--branch",
                     "v2.12.0", "--prepare", env=_env(sandbox))
    assert result.code == 0, result.err
    assert f"api=pr-{NUMBER}" in result.out
