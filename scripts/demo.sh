#!/usr/bin/env bash
# Install (if needed), then train the built-in demo profile on the CPU (no GPU, no internet) and watch
# it in the app; without a terminal, follow it on stdout instead. Quitting the app leaves the run going.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1
exec .venv/bin/tuitrain run demo --app "$@"
