"""Wheels built by hand, so no build tool or network is needed."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def build_wheel(
    directory: Path, name: str = "tinypkg", version: str = "1.0", requires: tuple[str, ...] = ()
) -> Path:
    """A minimal pure-Python wheel, made by hand so no build tool or network is needed."""
    files = {
        f"{name}/__init__.py": f'VERSION = "{version}"\n',
        f"{name}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + "".join(f"Requires-Dist: {line}\n" for line in requires)
        ),
        f"{name}-{version}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record_name = f"{name}-{version}.dist-info/RECORD"
    records = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        records.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    records.append(f"{record_name},,")
    files[record_name] = "\n".join(records) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel
