#!/usr/bin/env bash
# Make .venv and install tuitrain into it. Safe to run again: it only installs what is missing.
# torch goes in first, pinned: without the pin pip pulls a multi-GB CUDA build on a CPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/pip install --disable-pip-version-check -q "$TORCH_SPEC"
fi
stamp=.venv/.tuitrain-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install --disable-pip-version-check -q -e ".[test]"
  touch "$stamp"
fi
# An editable install leaves tuitrain uncompiled; byte-compile it once so the CLI and the app start
# fast even where PYTHONDONTWRITEBYTECODE is set (Python then never writes .pyc files itself).
.venv/bin/python -m compileall -q tuitrain >/dev/null || true
