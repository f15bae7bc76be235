"""Files bundled with the installed package: the real branch map, the demo's patch set and
`init`'s commented example. ``branches.yaml`` and ``put_metric/`` are symlinks to the
checkout's own ``branches.yaml`` and ``patches/put_metric/`` (one copy), plain files in a wheel
(pyproject.toml's package-data names them).
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def real_map() -> Path:
    """The real branch map of Ascend/pytorch (the fork left as a placeholder to set)."""
    return _HERE / "branches.yaml"


def demo_patch_set() -> Path:
    """The put_metric patch set the demo applies."""
    return _HERE / "put_metric"


def example_patch_yaml() -> Path:
    """The commented example `init` writes into patches/."""
    return _HERE / "example-patch.yaml"


def bundled_sets() -> dict[str, Path]:
    """The bundled patch sets (``init --from-shipped NAME``), by name."""
    return {"put_metric": demo_patch_set()}
