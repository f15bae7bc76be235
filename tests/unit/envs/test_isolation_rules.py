"""The sandbox's pure rules: the `isolation:` key, the ISOLATION evidence line, a child's
environment without secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport import process
from backport.config import load_branch_map
from backport.envs.model import TestRun as Run
from backport.errors import ConfigError
from backport.records import BranchRecord
from backport.records import TestResult as Result
from backport.redact import register_secret
from backport.report import wording as ef
from backport.states import Status

MAP = """\
forge: local
upstream: a/b
fork: c/b
upstream_url: /srv/up.git
fork_url: /srv/fork.git
environments:
  e1: {{python: /py{isolation}}}
branches:
  master: {{env: e1}}
"""


def _map(tmp_path: Path, isolation: str):
    config = tmp_path / "branches.yaml"
    config.write_text(MAP.format(isolation=isolation), encoding="utf-8")
    return load_branch_map(config, environ={})


def test_isolation_defaults_to_the_sandbox_and_accepts_none(tmp_path: Path) -> None:
    assert _map(tmp_path, "").environments["e1"].isolation == "pid-namespace"
    assert _map(tmp_path, ", isolation: none").environments["e1"].isolation == "none"
    assert _map(tmp_path, ", isolation: pid-namespace").environments["e1"].isolation == \
        "pid-namespace"


@pytest.mark.parametrize("value", ["off", "'no'", "[none]", "''"])
def test_any_other_isolation_is_one_error_naming_file_line_and_key(
        tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        _map(tmp_path, f", isolation: {value}")
    message = str(info.value)
    assert "branches.yaml:7" in message and "isolation" in message and "\n" not in message


def _run(isolation: str | None) -> Run:
    return Run(path="test/test_x.py", command="python test/test_x.py", exit_code=0, ran=1,
                   ok=True, summary=["Ran 1 test", "OK"], duration=0.1, log="x.log",
                   runner="isolated", isolation=isolation)


def _facts(*runs: Run) -> ef.Facts:
    record = BranchRecord(target="master", fork_branch="bp-master", status=Status.DONE,
                          test=Result.of_runs(runs, "a" * 40))
    return ef.Facts(record=record, upstream="a/b", api="x")


def test_isolation_line_only_where_a_run_had_no_sandbox() -> None:
    sandboxed = ef.written(_facts(_run("pid-namespace")))
    assert not [line for line in sandboxed if line.startswith(f"{ef.ISOLATION.key}=")]
    bare = ef.written(_facts(_run("pid-namespace"), _run("none")))
    assert "ISOLATION=none" in bare
    assert bare.index("ISOLATION=none") == bare.index(next(
        line for line in bare if line.startswith(f"{ef.RUNNER.key}="))) + 1


def test_a_child_environment_holds_no_secret_by_name_or_value() -> None:
    register_secret("from-credential-fill-4242")
    environ = {"GITCODE_TOKEN": "t1", "BACKPORT_TOKEN": "t2", "PATH": "/bin",
               "CI_JOB_SECRET": "x-from-credential-fill-4242-y"}
    assert process.secret_free(environ) == {"PATH": "/bin"}
