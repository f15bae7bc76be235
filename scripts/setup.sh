#!/usr/bin/env bash
# Set up a fresh machine for backport: the tool's venv (.venv) and the torch test environment
# (.ci/venvs/torch-2.13.0: torch 2.13.0 CPU + expecttest + torch_npu 2.13.0, no CANN, plus
# unittest-xml-reporting, which torch's run_tests() imports whenever CI is set in the environment).
# Idempotent: a second run only checks. Usage: bash scripts/setup.sh [--no-torch]
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), "backport needs Python 3.11+"'

if [ ! -x .venv/bin/backport ] || [ pyproject.toml -nt .venv/.installed ]; then
  echo "setup: creating .venv with backport and its test tools"
  "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
  touch .venv/.installed
fi

if [ "${1:-}" != "--no-torch" ]; then
  TORCH_VENV=.ci/venvs/torch-2.13.0
  if ! "$TORCH_VENV/bin/python" -c 'import importlib.metadata as m; m.version("torch"); m.version("torch_npu"); m.version("expecttest"); m.version("unittest-xml-reporting")' 2>/dev/null; then
    echo "setup: creating $TORCH_VENV (torch 2.13.0 CPU, expecttest, torch_npu 2.13.0)"
    mkdir -p .ci/venvs
    "$PY" -m venv "$TORCH_VENV"
    # Pinned: a bare `torch` pulls a multi-GB CUDA build.
    "$TORCH_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      torch==2.13.0 expecttest torch_npu==2.13.0 unittest-xml-reporting
  fi
fi
echo "setup: ready"
