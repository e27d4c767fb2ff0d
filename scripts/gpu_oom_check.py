"""Issue 37, survive an out-of-memory, on a CUDA GPU: a run whose batch is too big for the GPU memory it may use runs
out of memory for real (the CUDA caching allocator's torch.OutOfMemoryError, its figures in the error), and with
`[run] on_oom = "split_batch"` it is started again with the batch split, and finishes with the same effective batch.

    python scripts/gpu_oom_check.py              # on a CUDA GPU (scripts/gpu_check.sh runs it; about a minute on an H100)
    python scripts/gpu_oom_check.py --rehearse   # on the CPU: the same run, shrunk, torch's OutOfMemoryError raised
                                                 # by the engine's test fault (no allocator to run out)

The model is GPT-2 small built from its config (causal-lm on the built-in generated text, 512-token blocks,
fp32), batch 16: about 17 GiB by tuitrain's estimate. Each rank may use 12 GiB of the card
(`TUITRAIN_TEST_GPU_MEMORY_CAP`, tuitrain.engine.faults_for_tests): a batch of 16 runs out, 8 fits (≈ 9.5 GiB), on
a card of any size, while the plan's estimate, which sees the whole card, lets it start. Exit 0 when the run
finished with the batch split and the effective batch unchanged; the figures are printed either way.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CAP = 12 * 2**30
BATCH = 16
PROFILE = """[run]
name = "oom-check"
on_oom = "split_batch"
restart_backoff = 1

[model]
task = "causal-lm"

[model.config]
model_type = "gpt2"
n_embd = {embd}
n_layer = {layers}
n_head = 12
n_positions = {block}

[model.train_tokenizer]
vocab_size = 1000

[data]
generate = "sentiment-words"
num_train = {rows}
num_validation = 50
block_size = {block}

[training]
max_steps = 3
per_device_train_batch_size = {batch}
learning_rate = 1e-4
warmup_steps = 0
logging_steps = 1
save_strategy = "steps"
save_steps = 2
eval_strategy = "no"
report_to = "none"
dataloader_num_workers = 0

[hardware]
accelerator = "{accelerator}"
{gpus}
[distributed]
strategy = "single"
num_processes = 1
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rehearse", action="store_true", help="on the CPU, shrunk: the engine's test fault raises")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tuitrain.engine.faults_for_tests import GPU_MEMORY_CAP_ENV, RAISE_ENV

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        runs = folder / "runs"
        profile = folder / "oom.toml"
        shape = (dict(embd=48, layers=2, block=64, rows=2000, accelerator="cpu", gpus="") if args.rehearse
                 else dict(embd=768, layers=12, block=512, rows=8000, accelerator="cuda", gpus="gpus = [0]\n"))
        profile.write_text(PROFILE.format(batch=BATCH, **shape))
        env = {**os.environ, "TUITRAIN_RUNS_DIR": str(runs), "HF_HUB_OFFLINE": "1"}
        if args.rehearse:
            env[RAISE_ENV] = json.dumps({"raise": "OutOfMemoryError", "step": 1, "batch_above": BATCH // 2})
        else:
            env[GPU_MEMORY_CAP_ENV] = str(CAP)
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "tuitrain", "run", str(profile)], env=env, cwd=folder,
                              capture_output=True, text=True)
        took = time.monotonic() - began
        found = [p for p in runs.iterdir() if (p / "run.json").exists()] if runs.is_dir() else []
        if not found:
            print(f"no run was made (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            return 1
        run = found[0]
        record = json.loads((run / "run.json").read_text())
        print(f"run {record['id']}: {record['status']} after {took:.0f} s (exit {done.returncode}), "
              f"attempt {record.get('attempt', 1)}")
        for restart in record.get("restarts") or []:
            print(f"attempt {restart['attempt'] - 1} ended: {restart.get('error')}")
            print(f"  restarted with {restart.get('batch')}")
        if record.get("not_restarted"):
            print(record["not_restarted"])
        try:
            trained = json.loads((run / "training_args.json").read_text())
            batch, steps = trained["per_device_train_batch_size"], trained["gradient_accumulation_steps"]
        except (OSError, ValueError, KeyError):
            batch, steps = None, None
        print(f"trained with per_device_train_batch_size {batch} × gradient_accumulation_steps {steps}")
        problems = []
        if record["status"] != "finished":
            problems.append(f"the run {record['status']}: {record.get('error')}")
        if not record.get("restarts") or not all("batch" in r for r in record["restarts"]):
            problems.append("no restart split the batch (it did not run out of memory?)")
        elif not all("out of memory" in str(r.get("error")) for r in record["restarts"]):
            problems.append("a restart's cause was not the out-of-memory")
        if batch is None or steps is None or batch * steps != BATCH or batch >= BATCH:
            problems.append(f"the effective batch changed, or the batch was not split: {batch} × {steps}")
        for problem in problems:
            print(f"FAILED: {problem}")
        if not problems:
            print(f"OK: out of memory at batch {BATCH}, finished at {batch} × {steps} in {took:.0f} s")
        if problems and done.returncode != 0:
            print(done.stderr[-2000:])
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
