#!/usr/bin/env bash
# Set up a fresh machine for backport: the tool's venv (.venv) and the torch test environment
# (.ci/venvs/torch-2.13.0: torch 2.13.0, expecttest, torch_npu 2.13.0 (no CANN) and
# unittest-xml-reporting, which torch's run_tests() imports whenever CI is set in the environment).
# torch comes from pip's configured index unless TORCH_INDEX_URL names another: on Linux x86_64,
# PyPI's torch==2.13.0 is the CUDA build (several GB with its nvidia-* packages); its CPU build is
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu. Elsewhere (aarch64, macOS) PyPI's is CPU.
# Idempotent: a second run only checks. It changes no tracked file: what it makes (.venv, the
# torch environment, .ci/wheelhouse: the wheels the workflow and packaging tests install offline)
# is ignored by git. Usage: [TORCH_INDEX_URL=URL] bash scripts/setup.sh [--no-torch]
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), "backport needs Python 3.11+"'

# The editable install is a path in a .pth file (setuptools' "compat" mode), not the default
# import hook: that hook is imported by every Python .venv starts, and the tests start
# thousands (the tool, its probes, a branch's test files under the plain interpreter): 14 ms each.
if [ ! -x .venv/bin/backport ] || [ pyproject.toml -nt .venv/.installed ]; then
  echo "setup: creating .venv with backport and its test tools"
  "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    --config-settings editable_mode=compat -e '.[test]'
  touch .venv/.installed
fi

# A wheelhouse of what the workflow and packaging tests install: backport's dependencies at
# the versions .venv holds, and its build backend. Those tests then need no package registry.
# Ignored by git: what pip resolves here differs by day and by machine.
WHEELS=.ci/wheelhouse
if [ ! -f "$WHEELS/.complete" ] || [ .venv/.installed -nt "$WHEELS/.complete" ]; then
  echo "setup: filling $WHEELS with the wheels of backport's dependencies and build backend"
  rm -rf "$WHEELS"
  mkdir -p "$WHEELS"
  .venv/bin/python - > "$WHEELS/requirements.txt" <<'EOF'
import importlib.metadata as md
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

todo, pins = ["backport"], {}
while todo:
    for line in md.distribution(todo.pop()).requires or []:
        req = Requirement(line)
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        if canonicalize_name(req.name) not in pins:
            pins[canonicalize_name(req.name)] = md.version(req.name)
            todo.append(req.name)
print("\n".join(f"{name}=={version}" for name, version in sorted(pins.items())))
EOF
  .venv/bin/python -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
    --dest "$WHEELS" -r "$WHEELS/requirements.txt" "setuptools>=68" wheel
  touch "$WHEELS/.complete"
fi

if [ "${1:-}" != "--no-torch" ]; then
  TORCH_VENV=.ci/venvs/torch-2.13.0
  if ! "$TORCH_VENV/bin/python" -c 'import importlib.metadata as m; m.version("torch"); m.version("torch_npu"); m.version("expecttest"); m.version("unittest-xml-reporting")' 2>/dev/null; then
    TORCH_INDEX_URL=${TORCH_INDEX_URL:-}
    if [ -n "$TORCH_INDEX_URL" ]; then
      echo "setup: creating $TORCH_VENV: torch 2.13.0 from $TORCH_INDEX_URL, then expecttest," \
           "torch_npu 2.13.0 and unittest-xml-reporting from pip's configured index"
      FROM=(--index-url "$TORCH_INDEX_URL")
    else
      echo "setup: creating $TORCH_VENV: torch 2.13.0, expecttest, torch_npu 2.13.0 and" \
           "unittest-xml-reporting from pip's configured index; on Linux x86_64 PyPI's torch is" \
           "the CUDA build (several GB); for the CPU build run" \
           "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh"
      FROM=()
    fi
    mkdir -p .ci/venvs
    "$PY" -m venv "$TORCH_VENV"
    # Pinned: a bare `torch` would take whatever is newest.
    "$TORCH_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      ${FROM[@]+"${FROM[@]}"} torch==2.13.0
    "$TORCH_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      expecttest torch_npu==2.13.0 unittest-xml-reporting
    echo "setup: installed: $(TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$TORCH_VENV/bin/python" -c 'import torch; cuda = torch.version.cuda; print(f"torch {torch.__version__} (" + (f"CUDA {cuda} build" if cuda else "CPU build") + ")")')"
  fi
fi
# The audit page's browser test (tests/system/audit) drives Debian's headless chromium: installed
# here when this machine can (root, apt-get); elsewhere that test skips, naming the package.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing chromium (apt-get) for the audit page's browser test"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1; then
    echo "setup: chromium could not be installed; tests/system/audit will skip"
  fi
fi
echo "setup: ready"
