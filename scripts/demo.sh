#!/usr/bin/env bash
# Install (if needed) and train the built-in demo profile on the CPU: no GPU, no internet.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1
exec .venv/bin/tuitrain run demo "$@"
