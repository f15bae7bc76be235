#!/usr/bin/env bash
# Run backport's tests. With no layer: set-up, lint, types and every layer (what CI runs).
#   bash scripts/test.sh                 # ruff, mypy, tests/unit, tests/integration, tests/system
#   bash scripts/test.sh unit            # only tests/unit: pure Python, no lint (between two edits)
#   bash scripts/test.sh integration|system [PYTEST ARGS...]   # one layer, no lint
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export BACKPORT_TEST_PYTHON="${BACKPORT_TEST_PYTHON:-$PWD/.ci/venvs/torch-2.13.0/bin/python}"
# Bytecode is written (into the ignored __pycache__ folders): with PYTHONDONTWRITEBYTECODE set,
# every process the tests start would compile backport again, and every pytest worker rewrite
# every test module again; that was a tenth of the suite's CPU.
unset PYTHONDONTWRITEBYTECODE
case "${1:-}" in
  unit)
    shift
    [ -x .venv/bin/python ] || bash scripts/setup.sh --no-torch
    # One process: the unit tests take less time than starting pytest-xdist's workers.
    exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 0 tests/unit "$@" ;;
  integration|system)
    layer=$1; shift
    bash scripts/setup.sh
    exec .venv/bin/python -m pytest -q -p no:cacheprovider -n auto "tests/$layer" "$@" ;;
esac
bash scripts/setup.sh
.venv/bin/ruff check backport tests bench scripts
.venv/bin/mypy
# -n auto: pytest-xdist runs the tests in one worker per core; every test has its own folders.
.venv/bin/python -m pytest -q -p no:cacheprovider -n auto "$@"
