"""A venv with pip, made cheaply, for tests whose subject is not the venv's creation."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

_PIP_SCRIPT = """#!{python}
import re
import sys
from pip._internal.cli.main import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


def venv_with_pip(root: Path, python: Path | None = None,
                  env: dict[str, str] | None = None) -> Path:
    """A venv of ``python`` (default: this interpreter) at ``root`` holding pip, as ``python -m
    venv`` leaves one (its ``pip`` scripts included); returns its interpreter. It is made
    without pip and given this interpreter's own pip (package and metadata, compiled):
    ensurepip would spend seconds installing and compiling the same files. ``python`` must be
    this interpreter's version (its base, or a venv of it)."""
    subprocess.run([str(python or sys.executable), "-m", "venv", "--without-pip", str(root)],
                   check=True, env=env, capture_output=True)
    import pip

    source = Path(pip.__file__).resolve().parent.parent
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    target = root / "lib" / f"python{version}" / "site-packages"
    shutil.copytree(source / "pip", target / "pip", symlinks=True)
    for info in source.glob("pip-*.dist-info"):
        shutil.copytree(info, target / info.name, symlinks=True)
    interpreter = root / "bin" / "python"
    for name in ("pip", f"pip{sys.version_info[0]}", f"pip{version}"):
        script = root / "bin" / name
        script.write_text(_PIP_SCRIPT.format(python=interpreter), encoding="utf-8")
        os.chmod(script, 0o755)
    return interpreter
