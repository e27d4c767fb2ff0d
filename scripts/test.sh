#!/usr/bin/env bash
# Install (if needed), lint (ruff), type check (mypy), then run the whole test suite, end-to-end runs included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# Lint and type check first: fast, and a finding fails the run with the tool's own output.
.venv/bin/ruff check tuitrain tests benchmarks
.venv/bin/mypy tuitrain
export HF_HUB_OFFLINE=1
# torch's OpenMP threads sleep between parallel regions instead of spinning: a one-rank run (every core's
# threads) beside the other worker's runs otherwise spins its steps 50 times slower on a busy 2-core machine.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# One worker per core, a test file per worker at a time (files keep their shared runs and hosts together);
# `-n 0` after it runs everything in this process.
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
