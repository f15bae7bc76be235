"""What the package ships for users: the real branch map, the demo's patch set, init's example.

``branches.yaml`` and ``put_metric/`` here are symlinks to the checkout's own ``branches.yaml``
and ``patches/put_metric/``: one copy, which a built wheel holds as plain files.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def real_map() -> Path:
    """The shipped branch map of Ascend/pytorch (the fork left as a placeholder to set)."""
    return _HERE / "branches.yaml"


def demo_patch_set() -> Path:
    """The put_metric patch set the demo applies."""
    return _HERE / "put_metric"


def example_patch_yaml() -> Path:
    """The commented example `init` writes into patches/."""
    return _HERE / "example-patch.yaml"


def shipped_sets() -> dict[str, Path]:
    """The patch sets the package ships (``init --from-shipped NAME``), by name."""
    return {"put_metric": demo_patch_set()}
