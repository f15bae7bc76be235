"""The placeholder earlier shipped maps had for the fork is read as not set: the fork follows
the token's login, and every command that reads the map says so once, naming file and line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from backport.config.branch_map import FORK_PLACEHOLDER
from backport.demo.sandbox import Sandbox
from tests.helpers.project import edit_config, git, run_app


def _fork_line(config: Path) -> int:
    lines = config.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith("fork:"))


def _prs(sandbox: Sandbox) -> list[str]:
    forge = sandbox.project / ".backport" / "forge.sqlite"
    if not forge.exists():
        return []
    with sqlite3.connect(forge) as db:
        return [row[0] for row in db.execute("SELECT head_repo FROM prs")]


def _read_as_not_set(config: str, line: int) -> str:
    return (f"{config}:{line}: fork is the old placeholder '{FORK_PLACEHOLDER}', read as not set: "
            "the fork follows the token's login; delete the line, or name your fork there "
            "(owner/repo)")


def _placeholder(sandbox: Sandbox) -> None:
    edit_config(sandbox, lambda data: data.update(fork=FORK_PLACEHOLDER))


def test_check_warns_of_the_placeholder_and_names_the_fork_it_stands_for(sandbox: Sandbox) -> None:
    _placeholder(sandbox)
    result = run_app(sandbox.project, "check", "--offline", "--json")
    assert result.code == 0, result.err
    report = result.json()
    expected = _read_as_not_set("branches.yaml", _fork_line(sandbox.config))
    assert [w for w in report["warnings"] if "fork" in w] == [f"fork: {expected}"]
    (pushed_to,) = [f for f in report["findings"] if f["check"] == "pushed to"]
    assert pushed_to["detail"] == ("follows the token's login: <token's login>/pytorch "
                                   "(offline: not asked)")


def test_apply_with_the_placeholder_pushes_to_the_users_fork(sandbox: Sandbox) -> None:
    _placeholder(sandbox)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                     env={"BACKPORT_LOCAL_USER": "lgxxx"})
    assert result.code == 0, result.err
    expected = _read_as_not_set("branches.yaml", _fork_line(sandbox.config))
    assert result.err.splitlines()[0] == f"warning: {expected}"
    assert "refs/heads/test-put-metric-master" in git(sandbox.fork, "for-each-ref")
    assert _prs(sandbox) == ["lgxxx/pytorch"] * 4


def test_apply_without_a_token_names_it_and_the_fork_it_names(sandbox: Sandbox, gitcode) -> None:
    _placeholder(sandbox)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                     env={"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "", "HOME": str(sandbox.project)})
    assert result.code != 0
    line = result.err.strip().splitlines()[-1]
    assert line.startswith("error: 2 things are missing before the run can start: no GitCode "
                           "token for "), line
    assert line.endswith("; and the fork's name: it follows the token's login "
                         "(<token's login>/pytorch), or set fork: in branches.yaml."), line
    assert gitcode.requests == []  # stopped before asking the forge anything
    assert git(sandbox.fork, "for-each-ref") == ""


def test_a_run_that_does_not_push_says_nothing_of_the_fork(sandbox: Sandbox) -> None:
    _placeholder(sandbox)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--no-push", "--skip-tests")
    assert result.code == 0, result.err
    assert "fork" not in result.err
    assert git(sandbox.fork, "for-each-ref") == ""


def test_a_fork_set_by_the_user_is_named_without_a_warning(sandbox: Sandbox) -> None:
    result = run_app(sandbox.project, "check", "--offline", "--json")
    assert result.code == 0, result.err
    report = result.json()
    assert not any("fork" in w for w in report["warnings"])
    (pushed_to,) = [f for f in report["findings"] if f["check"] == "pushed to"]
    assert pushed_to["detail"] == "lgxxx/pytorch (set in branches.yaml)"


def test_a_local_forge_without_a_user_says_how_to_name_the_fork(sandbox: Sandbox) -> None:
    edit_config(sandbox, lambda data: data.pop("fork"))
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert result.code != 0
    assert ": set BACKPORT_LOCAL_USER (the fork follows it) or fork: in branches.yaml; and the " \
           "fork's name" in " ".join(result.err.split())
    assert git(sandbox.fork, "for-each-ref") == ""
    dry = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--dry-run")
    assert dry.code == 0, dry.out + dry.err  # plans, and names the user among what it lacks
    assert "needs what this dry run does not: no user for the local forge" in dry.out
