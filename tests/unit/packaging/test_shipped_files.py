"""What the package ships is the checkout's own copy, not a second one that could drift."""

from __future__ import annotations

from pathlib import Path

from backport.bundled import DEMO_PATCH_SET, EXAMPLE_PATCH_YAML, REAL_MAP

ROOT = Path(__file__).resolve().parents[3]


def test_the_shipped_map_and_patch_set_are_the_checkouts() -> None:
    assert REAL_MAP.resolve() == (ROOT / "branches.yaml").resolve()
    assert DEMO_PATCH_SET.resolve() == (ROOT / "patches" / "put_metric").resolve()
    assert (DEMO_PATCH_SET / "patch.yaml").is_file()
    assert EXAMPLE_PATCH_YAML.is_file()
