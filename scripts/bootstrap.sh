#!/usr/bin/env bash
# Make .venv and install tuitrain into it. Safe to run again: it only installs what is missing.
# torch goes in first, pinned, and the build fits the machine (tuitrain/torch_build.py decides, before tuitrain is
# installed): where an NVIDIA driver is installed (NVML's libnvidia-ml loads, or nvidia-smi is there, as
# `tuitrain gpus` finds one), the CUDA build the driver runs; where none is, the CPU build (no multi-GB CUDA
# libraries). TORCH_SPEC overrides the choice: TORCH_SPEC='torch==2.13.0+cu126' (what pip installs, as given).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if [ -n "${TORCH_SPEC:-}" ]; then
    torch_args=("$TORCH_SPEC")
  else
    torch_args=()
    while IFS= read -r arg; do torch_args+=("$arg"); done < <(.venv/bin/python -m tuitrain.torch_build pip-args)
  fi
  # The build from what pip already finds (a wheel cache, a mirror, find-links) first: torch's own index is asked only
  # where that has none (unreachable, it costs retries and warnings).
  .venv/bin/pip install --disable-pip-version-check -q "${torch_args[0]}" 2>/dev/null \
    || .venv/bin/pip install --disable-pip-version-check -q "${torch_args[@]}"
fi
stamp=.venv/.tuitrain-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install --disable-pip-version-check -q -e ".[test]"
  touch "$stamp"
fi
# An NVIDIA driver here but a torch without CUDA (installed before, or by TORCH_SPEC): say so, with the command that
# fixes it; CUDA runs are refused until then (`tuitrain validate` says the same).
.venv/bin/python -m tuitrain.torch_build check || true
# An editable install leaves tuitrain uncompiled; byte-compile it once so the CLI and the app start
# fast even where PYTHONDONTWRITEBYTECODE is set (Python then never writes .pyc files itself).
.venv/bin/python -m compileall -q tuitrain >/dev/null || true
