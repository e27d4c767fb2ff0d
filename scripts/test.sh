#!/usr/bin/env bash
# Install (if needed), lint (ruff), type check (mypy), then run the whole test suite, end-to-end runs included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# Lint and type check first: fast, and a finding fails the run with the tool's own output.
.venv/bin/ruff check tuitrain tests benchmarks
.venv/bin/mypy tuitrain
export HF_HUB_OFFLINE=1
# One worker per core, a test file per worker at a time (files keep their shared runs and hosts together);
# `-n 0` after it runs everything in this process.
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
