#!/usr/bin/env bash
# Install (if needed) and run the whole test suite, end-to-end runs included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
