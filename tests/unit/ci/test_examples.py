"""The CI examples under examples/ci/ are valid YAML and only call real backport subcommands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "ci"
FILES = ("github-check.yml", "gitcode-check.yml", "github-apply.yml", "gitcode-apply.yml",
         "gitcode-trigger.yml")
SUBCOMMANDS = {"apply", "check", "status", "continue", "abort", "list", "new", "env", "docs",
               "matrix", "demo", "preview", "trigger"}
# `backport` as a command word: at line start or after a shell separator, optionally a path.
_INVOCATION = re.compile(r"(?:^|[\s;&|(]|\$\()(?:[\w.~/-]*/)?backport(?![\w.-])((?:[ \t]+[^\s;&|)<>]+)*)",
                         re.MULTILINE)


def _load(name: str) -> dict:
    with open(EXAMPLES / name, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    assert isinstance(data, dict), name
    return data


def _run_scripts(node: object) -> Iterator[str]:
    """Every `run:` script in a workflow, wherever it sits."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "run" and isinstance(value, str):
                yield value
            else:
                yield from _run_scripts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _run_scripts(item)


def invocations(name: str) -> list[list[str]]:
    """The argument lists of every `backport …` call in a file's run scripts."""
    calls = []
    for script in _run_scripts(_load(name)):
        for match in _INVOCATION.finditer(script):
            calls.append(shlex.split(match.group(1)))
    return calls


def _triggers(data: dict) -> dict:
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1).
    return data.get("on", data.get(True))


@pytest.mark.parametrize("name", FILES)
def test_valid_yaml_with_jobs(name: str) -> None:
    data = _load(name)
    assert data["name"]
    assert data["jobs"] and all("steps" in job for job in data["jobs"].values())
    assert _triggers(data)


@pytest.mark.parametrize("name", FILES)
def test_only_known_subcommands(name: str) -> None:
    calls = invocations(name)
    assert calls, f"{name} runs no backport command"
    for args in calls:
        assert args and args[0] in SUBCOMMANDS, (name, args)


def test_check_workflows_watch_the_patch_inputs() -> None:
    for name in ("github-check.yml", "gitcode-check.yml"):
        triggers = _triggers(_load(name))
        for event in ("push", "pull_request"):
            assert set(triggers[event]["paths"]) == {"branches.yaml", "patches/**"}, name
        assert ["check", "--json"] in invocations(name)
    for name in FILES:  # a pinned backport, never the checkout's own code
        scripts = "\n".join(_run_scripts(_load(name)))
        assert '"$BACKPORT_PIN"' in scripts and "install ." not in scripts, name
        assert "install --quiet ./" not in scripts, name


def test_apply_matrix_is_one_job_per_branch_on_its_own_runner() -> None:
    data = _load("github-apply.yml")
    assert list(data["jobs"]) == ["plan", "apply"]  # no fan-in job: the PRs are the shared state
    apply_job = data["jobs"]["apply"]
    assert apply_job["runs-on"] == "${{ matrix.runs_on }}"
    assert apply_job["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    calls = invocations("github-apply.yml")
    assert ["matrix", "--format", "github", "--api", "$API"] in calls
    assert ["apply", "--api", "$API", "--branch", "$BRANCH", "--no-push", "--json"] in calls
    assert ["apply", "--api", "$API", "--branch", "$BRANCH", "--skip-tests", "--json"] in calls
    assert ["status", "--api", "$API", "--branch", "$BRANCH", "--from-forge"] in calls
    steps = [s for s in apply_job["steps"] if "apply" in s.get("run", "")]
    assert steps[0]["env"]["BRANCH"] == "${{ matrix.branch }}"
    gitcode = _load("gitcode-apply.yml")["jobs"]
    assert len(gitcode) == 4 and all(
        "npu" in job["runs-on"] and any(t.startswith("torch-") for t in job["runs-on"])
        for job in gitcode.values())


def test_invocations_parse_against_the_cli() -> None:
    """Where the CLI is importable, every example call parses with its real options."""
    try:
        from backport.cli import cli
    except ImportError as exc:  # the CLI is still being assembled
        pytest.skip(f"backport.cli not importable: {exc}")
    import click

    for name in FILES:
        for args in invocations(name):
            cmd: click.Command | None = cli.get_command(click.Context(cli), args[0])
            assert cmd is not None, (name, args)
            rest = args[1:]
            while isinstance(cmd, click.Group) and rest:
                cmd, rest = cmd.get_command(click.Context(cmd), rest[0]), rest[1:]
                assert cmd is not None, (name, args)
            cmd.make_context(args[0], list(rest))


def test_trigger_workflow_starts_on_a_backport_comment_or_a_merge() -> None:
    gitcode = _triggers(_load("gitcode-trigger.yml"))
    assert gitcode["pull_request_comment"]["comments"] == ["^/backport"]
    assert gitcode["pull_request_comment"]["types"] == ["created"]
    assert gitcode["pr_comment"]["keyword"] == "^/backport"
    assert gitcode["pull_request"]["types"] == ["merge"]
    calls = invocations("gitcode-trigger.yml")
    assert ["trigger", "--plan"] in calls
    assert ["trigger", "--branch", "$BRANCH", "--prepare"] in calls
    assert not (EXAMPLES / "github-trigger.yml").exists()  # GitHub's payloads are never read
