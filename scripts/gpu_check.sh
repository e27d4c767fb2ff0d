#!/usr/bin/env bash
# Issue 28's checks on a machine with a CUDA GPU, in one go, each step bounded in time and logged to OUTDIR:
# the machine, the first `plan` after install (cold TrainingArguments cache), the GPU lane, the tests that say
# what they need of the driver, and issue 35's speed of one process against the plain script with the hint its
# samples give (benchmarks/real_model_speed.py --gpu).
# tuitrain must already be installed the way users install it (`pip install .`, not editable).
#
#     bash scripts/gpu_check.sh OUTDIR [--tokenizer DIR] [--rounds N] [--try-advice]
#
# Results go in docs/benchmarks.md ("A GPU user's first day"); the speed step takes its data from the checkout.
set -uo pipefail
out=${1:?usage: bash scripts/gpu_check.sh OUTDIR [benchmark options]}
shift
cd "$(dirname "$0")/.."
mkdir -p "$out"
py=${PYTHON:-python3}
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
scratch=$(mktemp -d)

{
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv
  "$py" -c "import sys, torch, transformers, accelerate; print(sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__)"
  "$py" -m pip check 2>&1 | tail -5
  echo "tuitrain: $(command -v tuitrain)"
  # The first command after install: the TrainingArguments cache is cold on a fresh machine.
  TIMEFORMAT="first plan after install: %R s wall"
  time (cd "$scratch" && TUITRAIN_RUNS_DIR="$scratch/runs" timeout 120 tuitrain plan demo --set hardware.accelerator=cuda >/dev/null; echo "exit $?")
  (cd "$scratch" && timeout 60 tuitrain gpus)
} 2>&1 | tee "$out/machine.txt"

echo "== the GPU lane" | tee "$out/lane.txt"
timeout 200 "$py" -m pytest -q -p no:cacheprovider -n 6 -rs --durations=15 tests/test_gpu_lane.py 2>&1 | tee -a "$out/lane.txt"

# ---- issue 35 (taken means taken; cuda means the GPU): its own block, run alone on the GPU after the lane ----
# A queued run waits behind a real training run on GPU 0, naming its rank, and starts after it ends; the rank says the
# GPU it trains on; what the driver gives of one process (SM share, peak memory) is printed for docs/benchmarks.md;
# and which torch build bootstrap.sh would install here, for this driver.
{
  echo "== issue 35: the queue behind a real run on GPU 0"
  "$py" -m tuitrain.torch_build pip-args
  "$py" -m tuitrain.torch_build check && echo "torch_build check: nothing to say (torch has CUDA, or there is no driver)"
  timeout 300 "$py" -m pytest -q -p no:cacheprovider -p no:xdist -s -rs tests/test_gpu_queue_lane.py
} 2>&1 | tee "$out/queue.txt"
# ---- end of issue 35's block ----

echo "== tests that say what they need of the driver, and the snapshots" | tee "$out/driver.txt"
timeout 120 "$py" -m pytest -q -p no:cacheprovider -n 6 -rs tests/test_hardware_discovery.py tests/test_hardware_cli.py \
  tests/test_cli_errors.py::test_gpus_on_a_machine_without_them tests/test_tui_snapshots.py 2>&1 | tee -a "$out/driver.txt"

# Issue 37, fits before it starts: the memory estimate against torch.cuda.max_memory_allocated for five models and
# setups built from config (BERT-base fp32, GPT-2 small in bf16, with checkpointing, with LoRA, a 0.9B Llama-like in
# bf16 weights); about a minute on an H100. The table goes into docs/benchmarks.md ("Fits before it starts").
echo "== the memory estimate against the measured peak" | tee "$out/memory.txt"
timeout 150 "$py" benchmarks/memory_estimate.py 2>&1 | tee -a "$out/memory.txt"

# Issue 37, survive an out-of-memory: GPT-2 small from config at batch 16 runs out of a 12 GiB share of the GPU for
# real, `[run] on_oom = "split_batch"` starts it again at 8 × 2 accumulation steps, and it finishes (the effective
# batch unchanged); under 90 s on an H100. Rehearsed on the CPU: python scripts/gpu_oom_check.py --rehearse.
echo "== an out-of-memory splits the batch and the run finishes" | tee "$out/oom.txt"
timeout 90 "$py" scripts/gpu_oom_check.py 2>&1 | tee -a "$out/oom.txt"

# ---- issue 35, items 3 and 4: no launcher tax for one process, and the hint on a launch-bound run ----
# BERT-base-sized from config, bf16, batch 32, 150 steps, the plain script and `tuitrain run` taking turns (3 rounds,
# each kind's first dropped): PASS when tuitrain's median wall <= 1.03 x plain + 1 s and its samples/s >= 0.99 x plain.
# Then one 300-step tuitrain run: its samples must say launch-bound (issue 35's run was, and was told input-bound).
# Data: tests/data/mrpc in the checkout, else ../shared/data/mrpc, else generated (the benchmark says which).
# About 4 minutes on an H100 (a run ~35 s); bounded at 330 s. `--try-advice` among this script's options also runs
# each setting the hint suggests (a larger batch, torch_compile: ~2 more minutes; bounded at 600 s then);
# `--hint-steps 0` leaves the hint's run out (about 50 s).
echo "== one process against the plain script, and the hint on a launch-bound run (issue 35)" | tee "$out/speed.txt"
speed_limit=330
case " $* " in *" --try-advice "*) speed_limit=600 ;; esac
timeout "$speed_limit" "$py" benchmarks/real_model_speed.py --gpu --only plain tuitrain --rounds 3 --drop-first --check \
  --hint-steps 300 "$@" 2>&1 | tee -a "$out/speed.txt"
echo "speed step exit ${PIPESTATUS[0]} (1: a FAIL line above; 124: out of time)" | tee -a "$out/speed.txt"
# ---- end of issue 35's speed block ----
rm -rf "$scratch"
