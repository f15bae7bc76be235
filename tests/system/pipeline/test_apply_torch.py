"""`apply` running the real put_metric test under a real torch 2.13.0 CPU venv (no CANN)."""

from __future__ import annotations

from tests.helpers.project import TORCH_PYTHON, edit_config, needs_torch, run_app

pytestmark = needs_torch


def test_no_push_records_honest_evidence_for_every_branch(sandbox):
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--no-push", "--json")
    assert result.code == 0, result.err
    status = run_app(sandbox.project, "status", "--json").json()
    assert len(status["branches"]) == 4
    for branch in status["branches"]:
        test, env = branch["test"], branch["env"]
        probe = env["probe"]
        assert branch["status"] == "tested"
        # The demo's stand-in file holds 3 tests; the patch adds test_put_metric.
        assert test["ran"] == 4 and test["ok"] is True and test["exit_code"] == 0
        assert "Ran 4 tests in" in test["summary"]
        assert probe["packages"]["torch"].startswith("2.13.0")
        assert probe["packages"]["torch_npu"] == "2.13.0"
        assert probe["cann"] is None
        assert not probe["npu_model"]
        assert env["autoload_disabled"] is True
        assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in env["note"]
    # The demo's one environment is named for what it holds and shared by all four branches.
    for branch in status["branches"]:
        assert branch["env"]["name"] == "torch-" + branch["env"]["probe"]["packages"]["torch"]
        assert branch["env"]["shared_with"] == ["v2.7.1", "v2.11.0", "v2.12.0", "master"]


def test_pin_mismatch_stops_before_any_test(sandbox):
    def pin(data: dict) -> None:
        (shared,) = data["environments"].values()
        data["environments"]["pinned-2.7.1"] = {**shared, "expect": {"torch": "2.7.1"}}
        data["branches"]["v2.7.1"]["env"] = "pinned-2.7.1"
    edit_config(sandbox, pin)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--no-push", "--json")
    assert result.code == 1
    by_target = {b["target"]: b for b in result.json()["branches"]}
    assert by_target["v2.7.1"]["status"] == "env-mismatch"
    assert "expected 2.7.1" in by_target["v2.7.1"]["message"]
    assert "2.13.0" in by_target["v2.7.1"]["message"]
    assert by_target["v2.7.1"]["test"] is None
    assert by_target["v2.11.0"]["status"] == "tested"


def test_npu_patch_set_without_npu_is_env_unavailable(sandbox):
    patch_yaml = sandbox.project / "patches" / "put_metric" / "patch.yaml"
    patch_yaml.write_text(patch_yaml.read_text().replace("device: none", "device: npu"))
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--no-push", "--json",
                     "--branch", "v2.7.1")
    assert result.code == 1
    (branch,) = result.json()["branches"]
    assert branch["status"] == "env-unavailable"
    assert branch["test"] is None


def test_a_failing_test_opens_no_pr_unless_asked(sandbox):
    assert TORCH_PYTHON
    patch = next((sandbox.project / "patches" / "put_metric").glob("0001-*.patch"))
    patch.write_text(patch.read_text().replace(
        '+                self.assertGreater(record.timestamp, 0)',
        '+                self.assertLess(record.timestamp, 0)'))
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--json",
                     "--branch", "v2.7.1")
    assert result.code == 1
    (branch,) = result.json()["branches"]
    assert branch["status"] == "test-failed"
    assert branch["test"]["ok"] is False and branch["test"]["exit_code"] != 0
    assert branch["pr"] is None
    drafted = run_app(sandbox.project, "apply", "--api", "put_metric", "--json",
                      "--branch", "v2.7.1", "--pr-on-failure")
    assert drafted.code == 1
    (branch,) = drafted.json()["branches"]
    assert branch["status"] == "test-failed"
    assert branch["pr"]["number"] == 1
