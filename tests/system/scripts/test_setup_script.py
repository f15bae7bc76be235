"""scripts/setup.sh says which torch build it installs and how to choose the CPU one (issue 30
item 8). pip is played by a stand-in that records each call: no package is downloaded."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# A stand-in interpreter: records its arguments; `-m venv DIR` makes DIR/bin/python (itself);
# the check that the torch environment is complete fails, so the script installs it. Importing
# torch fails as the real one does where torch_npu is installed without CANN, unless the
# backend autoload is off.
STUB = """#!/usr/bin/env bash
echo "$*" >> "$STUB_LOG"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; printf '#!/bin/sh\\n' > "$3/bin/backport"
  chmod +x "$3/bin/backport"
fi
if [ "$1" = "-c" ]; then
  case "$2" in
    *version_info*) exit 0 ;;
    *unittest-xml-reporting*) exit 1 ;;
    *"import torch"*)
      if [ "${TORCH_DEVICE_BACKEND_AUTOLOAD:-1}" != 0 ]; then
        echo "RuntimeError: Failed to load the backend extension: torch_npu." >&2; exit 1
      fi
      echo "$STUB_REPORT" ;;
  esac
fi
exit 0
"""


def _setup(tmp_path: Path, report: str, **env: str) -> tuple[str, list[str]]:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    stub = tmp_path / "python3"
    stub.write_text(STUB, encoding="utf-8")
    stub.chmod(0o755)
    log = tmp_path / "calls.log"
    result = subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], capture_output=True,
                            text=True, check=True,
                            env={**{k: v for k, v in os.environ.items()
                                    if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"},
                                 "PYTHON": str(stub), "STUB_LOG": str(log),
                                 "STUB_REPORT": report, **env})
    return result.stdout + result.stderr, log.read_text(encoding="utf-8").splitlines()


def _installs(calls: list[str]) -> list[str]:
    return [call for call in calls if call.startswith("-m pip install")]


def test_without_a_choice_it_says_which_build_the_index_gives_and_how_to_get_cpu(tmp_path):
    out, calls = _setup(tmp_path, "torch 2.13.0 (CUDA 12.8 build)", TORCH_INDEX_URL="")
    torch = [c for c in _installs(calls) if "torch==2.13.0" in c]
    assert len(torch) == 1 and "--index-url" not in torch[0]
    text = " ".join(out.split())
    assert "from pip's configured index" in text
    assert "on Linux x86_64 PyPI's torch is the CUDA build" in text
    assert f"TORCH_INDEX_URL={CPU_INDEX} bash scripts/setup.sh" in text
    assert "installed: torch 2.13.0 (CUDA 12.8 build)" in text


def test_torch_index_url_installs_torch_alone_from_that_index(tmp_path):
    out, calls = _setup(tmp_path, "torch 2.13.0+cpu (CPU build)", TORCH_INDEX_URL=CPU_INDEX)
    installs = _installs(calls)
    torch = [c for c in installs if "torch==2.13.0" in c]
    assert len(torch) == 1 and f"--index-url {CPU_INDEX}" in torch[0]
    rest = [c for c in installs if "torch_npu==2.13.0" in c]
    assert len(rest) == 1 and "--index-url" not in rest[0]  # torch_npu is on PyPI
    text = " ".join(out.split())
    assert f"torch 2.13.0 from {CPU_INDEX}" in text
    assert "installed: torch 2.13.0+cpu (CPU build)" in text
