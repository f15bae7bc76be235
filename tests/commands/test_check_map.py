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


def test_a_missing_interpreter_fails_online_and_warns_offline(sandbox, tmp_path):
    def break_env(data: dict) -> None:  # v2.11.0 gets an environment of its own, without python
        data["environments"]["torch-2.11.0"] = {"python": str(tmp_path / "gone" / "bin" / "python")}
        data["branches"]["v2.11.0"]["env"] = "torch-2.11.0"
    edit_config(sandbox, break_env)
    online = run_app(sandbox.project, "check", "--json")
    assert online.code == 1
    (problem,) = online.json()["problems"]
    assert problem.startswith("branch v2.11.0: environment 'torch-2.11.0' of branch v2.11.0: "
                              "interpreter ") and "does not exist" in problem
    offline = run_app(sandbox.project, "check", "--offline")
    assert offline.code == 0
    assert "environment 'torch-2.11.0'" in offline.out and "warning:" not in offline.err
    assert "1 environments" not in offline.out and "2 environments" in offline.out


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
