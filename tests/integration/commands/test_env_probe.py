"""`backport env probe`: each environment once, with the branches that use it."""

from __future__ import annotations

import platform
import sys

from tests.helpers.project import edit_config, run_app


def test_probe_reads_each_environment_once_for_all_its_branches(sandbox) -> None:
    def torchless(data: dict) -> None:
        # What the probe reads is the subject, not torch: this layer's interpreter has none,
        # and reading torch's version would import it (tests/system/pipeline/test_apply_torch.py
        # reads a torch venv's probe).
        for env in data["environments"].values():
            env["python"] = sys.executable
    edit_config(sandbox, torchless)
    result = run_app(sandbox.project, "env", "probe", "--json")
    assert result.code == 0, result.err
    (row,) = result.json()  # the sandbox's four branches share one environment
    assert row["branches"] == ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
    assert row["env"] == row["env_name"]
    assert row["interpreter"] == sys.executable
    assert row["platform"].startswith(platform.system())
    assert row["python"].count(".") == 2
