"""`check` validates the map itself: declared branches, interpreters, test files; names branches."""

from __future__ import annotations

import yaml

from tests.helpers.project import edit_config, run_app


def test_check_fails_for_a_declared_branch_missing_upstream_even_if_untargeted(sandbox):
    def add_branch(data: dict) -> None:
        data["branches"]["v9.9.9"] = {"env": next(iter(data["environments"]))}
    edit_config(sandbox, add_branch)  # patch.yaml lists its four targets, not v9.9.9
    result = run_app(sandbox.project, "check", "--json")
    assert result.code == 1, result.out
    assert result.json()["problems"] == [
        f"branch v9.9.9: target branch 'v9.9.9' does not exist in {sandbox.upstream}"]
    text = run_app(sandbox.project, "check")
    assert "problem: branch v9.9.9: " in text.err


def test_check_fails_for_a_test_file_neither_on_the_branch_nor_created(sandbox):
    spec = sandbox.project / "patches" / "put_metric" / "patch.yaml"
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["tests"].append({"path": "test/npu/test_absent.py"})
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = run_app(sandbox.project, "check", "--json")
    assert result.code == 1, result.out
    problems = result.json()["problems"]
    assert len(problems) == 4
    for target in ("v2.7.1", "v2.11.0", "v2.12.0", "master"):
        assert (f"put_metric on {target}: patch set put_metric: test file test/npu/test_absent.py "
                f"is not on branch {target} and the series does not create it") in problems
    assert run_app(sandbox.project, "check", "--offline").code == 0


def test_an_environment_not_built_here_is_a_warning_unless_envs_are_asked_for(sandbox, tmp_path):
    """Also: the JSON's ``ok`` and the exit status agree for check, check --envs, --offline."""
    def break_env(data: dict) -> None:  # v2.11.0 gets an environment of its own, without python
        data["environments"]["torch-2.11.0"] = {"python": str(tmp_path / "gone" / "bin" / "python")}
        data["branches"]["v2.11.0"]["env"] = "torch-2.11.0"
    edit_config(sandbox, break_env)
    bare = run_app(sandbox.project, "check", "--json")  # a CI runner without the environments
    assert bare.code == 0, bare.out
    report = bare.json()
    assert report["ok"] is True and report["problems"] == [] and report["envs"] is False
    (warning,) = report["warnings"]
    assert warning.startswith("branch v2.11.0: environment 'torch-2.11.0' of branch v2.11.0 is "
                              "not built here: interpreter ") and "does not exist" in warning
    asked = run_app(sandbox.project, "check", "--envs", "--json")  # a host that should have them
    assert asked.code == 1
    assert asked.json()["ok"] is False and asked.json()["envs"] is True
    (problem,) = asked.json()["problems"]
    assert problem == warning
    offline = run_app(sandbox.project, "check", "--offline")
    assert offline.code == 0
    assert "environment 'torch-2.11.0'" in offline.out and "warning:" not in offline.err
    assert "1 environments" not in offline.out and "2 environments" in offline.out
    # The JSON's ok and the exit status agree, passing or not.
    offline_json = run_app(sandbox.project, "check", "--offline", "--json")
    for result in (bare, asked, offline_json):
        assert result.json()["ok"] is (result.code == 0), result.out


def test_the_ci_step_summary_gets_one_table(sandbox, tmp_path):
    def add_branch(data: dict) -> None:
        data["branches"]["v9.9.9"] = {"env": next(iter(data["environments"]))}
    edit_config(sandbox, add_branch)
    github, atomgit = tmp_path / "github.md", tmp_path / "atomgit.md"
    github.write_text("earlier step\n", encoding="utf-8")
    result = run_app(sandbox.project, "check", env={"GITHUB_STEP_SUMMARY": str(github),
                                                    "ATOMGIT_STEP_SUMMARY": str(atomgit)})
    assert result.code == 1
    for path in (github, atomgit):
        text = path.read_text(encoding="utf-8")
        rows = [line for line in text.splitlines() if line.startswith("|")]
        assert rows[0] == "| subject | check | result | detail |"
        assert rows[1].startswith("| --- |")
        assert any(row.startswith("| branch v9.9.9 | exists upstream | FAIL |") for row in rows)
        assert len(rows) == len([r for r in text.splitlines() if r.strip()]) - (
            2 if path == github else 1), text  # one heading (and the earlier step's line)
    assert github.read_text(encoding="utf-8").startswith("earlier step\n")  # appended


def test_check_counts_in_words_that_agree(sandbox):
    def one_env(data: dict) -> None:
        (name,) = data["environments"]  # the demo's one environment
        data["branches"] = {"v2.7.1": {"env": name}}
    edit_config(sandbox, one_env)
    spec = sandbox.project / "patches" / "put_metric" / "patch.yaml"
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["branches"] = ["v2.7.1"]
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = run_app(sandbox.project, "check", "--offline")
    assert result.code == 0, result.err
    assert "1 target branch, 1 environment" in result.out
