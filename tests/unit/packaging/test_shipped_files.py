"""What the package ships is the checkout's own copy, not a second one that could drift."""

from __future__ import annotations

from pathlib import Path

from backport.bundled import demo_patch_set, example_patch_yaml, real_map

ROOT = Path(__file__).resolve().parents[3]


def test_the_shipped_map_and_patch_set_are_the_checkouts() -> None:
    assert real_map().resolve() == (ROOT / "branches.yaml").resolve()
    assert demo_patch_set().resolve() == (ROOT / "patches" / "put_metric").resolve()
    assert (demo_patch_set() / "patch.yaml").is_file()
    assert example_patch_yaml().is_file()
