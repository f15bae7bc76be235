"""`check --offline` says each thing once, and says what it did not try."""

from __future__ import annotations

from tests.helpers.project import edit_config, run_app


def test_each_environment_warning_once_and_the_untried_checks_named(sandbox, tmp_path):
    def two_missing(data: dict) -> None:
        data["environments"]["torch-2.11.0"] = {"python": str(tmp_path / "a" / "bin" / "python")}
        data["environments"]["torch-2.12.0"] = {"python": str(tmp_path / "b" / "bin" / "python")}
        data["branches"]["v2.11.0"]["env"] = "torch-2.11.0"
        data["branches"]["v2.12.0"]["env"] = "torch-2.12.0"
    edit_config(sandbox, two_missing)
    result = run_app(sandbox.project, "check", "--offline")
    assert result.code == 0, result.err
    both = result.out + result.err
    for name in ("torch-2.11.0", "torch-2.12.0"):
        assert both.count(f"environment '{name}' of branch") == 1, both
    assert "not tried" in result.out and "applies on them" in result.out
    online_only = ("exists upstream", "applies")
    rows = [line for line in result.out.splitlines() if line.startswith("│")]
    assert rows and not any(f" {check} " in row for row in rows for check in online_only)
