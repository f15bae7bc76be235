"""Files bundled with the installed package: the real branch map, the demo's patch set and
`init`'s commented example. ``branches.yaml`` and ``put_metric/`` are symlinks to the
checkout's own ``branches.yaml`` and ``patches/put_metric/`` (one copy), plain files in a wheel
(pyproject.toml's package-data names them).
"""

from pathlib import Path

_HERE = Path(__file__).resolve().parent
REAL_MAP = _HERE / "branches.yaml"  # Ascend/pytorch's map, the fork a placeholder to set
DEMO_PATCH_SET = _HERE / "put_metric"  # the demo's set, also `init --from-shipped put_metric`
EXAMPLE_PATCH_YAML = _HERE / "example-patch.yaml"  # the commented example `init` writes
