#!/usr/bin/env bash
# Run backport's whole test suite on a fresh machine: set-up, lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export BACKPORT_TEST_PYTHON="$PWD/.ci/venvs/torch-2.13.0/bin/python"
.venv/bin/ruff check backport tests bench scripts
.venv/bin/mypy
# -n auto: pytest-xdist runs the tests in one worker per core; every test has its own folders.
.venv/bin/python -m pytest -q -p no:cacheprovider -n auto "$@"
