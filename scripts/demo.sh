#!/usr/bin/env bash
# Run the offline demo on a fresh machine: set-up, then `backport demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/backport demo --python "$PWD/.ci/venvs/torch-2.13.0/bin/python" "$@"
