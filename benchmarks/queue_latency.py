"""The queue's figures (issue 22): from a dependency's end to the queued run's first step, against `tuitrain run`
started by hand at that moment; and the CPU that queued runs cost while they wait.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/queue_latency.py [--rounds 3] [--waiting 10] [--seconds 30]

Latency, each round: a long demo run A; B queued `--after A`; A stopped (`stop --now`); B's launch (run.json
`started`) and first logged step minus A's recorded end. Then a long demo run A'; the moment its end is recorded (polled every 50 ms) a
`tuitrain run demo --detach` starts C by hand; C's first step minus A''s end. Medians.

GPU freeing, each round: a recorded NVML table shows GPU 2 held by a stranger's process; a run queued for GPU 2;
the table rewritten with GPU 2 free; the queued run's launch (run.json `started`) minus that moment. (No CUDA here:
the launched run then fails at once; only the queue's part is measured.)

CPU: N runs queued after a run that never ends (a hand-made record, so no training shares the machine), and N
runs queued on a GPU a recorded NVML table shows taken (the first reads the table every 2 s, the others wait
behind it); the waiting supervisors' own CPU time (psutil) over --seconds, as a share of one core.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BIN, ROOT, Table, bench_env, machine_line, median

LONG = ["--set", "training.max_steps=100000", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
        "--set", "training.save_strategy=no"]
SHORT = ["--set", "training.max_steps=3", "--set", "training.logging_steps=1", "--set", "training.eval_strategy=no",
         "--set", "training.save_strategy=no"]


def tuitrain(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([str(BIN / "python"), "-m", "tuitrain", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stdout[-800:] + done.stderr[-800:])
    return done.stdout.strip()


def record(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def first_step(run: Path, timeout: float = 600) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = run / "events.jsonl"
        for line in path.read_text().splitlines() if path.exists() else []:
            event = json.loads(line)
            if event.get("event") == "log" and (event.get("step") or 0) >= 1:
                return float(event["time"])
        time.sleep(0.05)
    raise RuntimeError(f"{run.name}: no first step")


def until(predicate, timeout: float = 600, poll: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise RuntimeError("timed out")


def ended(run: Path) -> float | None:
    rec = record(run)
    return rec["ended"] if rec.get("ended") and rec["status"] not in ("queued", "running", "starting", "stopping") else None


def long_run(env: dict[str, str], runs: Path) -> Path:
    run = runs / tuitrain(env, "run", "demo", "--detach", *LONG)
    first_step(run)
    return run


def queued_round(env: dict[str, str], runs: Path) -> tuple[float, float]:
    """(to its launch, to its first step), from the dependency's end."""
    a = long_run(env, runs)
    b = runs / tuitrain(env, "run", "demo", "--after", a.name, *SHORT)
    tuitrain(env, "stop", a.name, "--now")
    end = until(lambda: ended(a))
    step = first_step(b)
    until(lambda: ended(b))
    return record(b)["started"] - end, step - end


def by_hand_round(env: dict[str, str], runs: Path) -> tuple[float, float]:
    a = long_run(env, runs)
    tuitrain(env, "stop", a.name, "--now")
    end = until(lambda: ended(a))
    c = runs / tuitrain(env, "run", "demo", "--detach", *SHORT)
    step = first_step(c)
    until(lambda: ended(c))
    return record(c)["started"] - end, step - end


def held_table(path: Path, taken: bool) -> None:
    """four_gpu_mixed with GPU 2 held by a stranger's process (or free), rewritten atomically."""
    table = json.loads((ROOT / "tests" / "fixtures" / "nvml" / "four_gpu_mixed.json").read_text())
    if taken:
        gpu = table["devices"][2]
        gpu["memory"]["used"] = int(gpu["memory"]["total"] * 0.95)
        gpu["compute_processes"] = [{"pid": 4100077, "used_memory": gpu["memory"]["used"]}]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(table))
    tmp.replace(path)


def gpu_round(env: dict[str, str], runs: Path, table: Path) -> float:
    """From GPU 2 freeing to the launch of the run queued for it."""
    held_table(table, taken=True)
    gpu_env = {**env, "TUITRAIN_NVML_TABLE": str(table)}
    b = runs / tuitrain(gpu_env, "run", "demo", "--queue", "--set", "hardware.accelerator=cuda", "--set",
                        "hardware.gpus=[2]", *SHORT)
    until(lambda: record(b).get("pids", {}).get("supervisor"))
    time.sleep(3)  # past its first looks: it waits on the GPU
    if record(b).get("started"):
        raise RuntimeError(f"{b.name} started on a taken GPU")
    freed = time.time()
    held_table(table, taken=False)
    started = until(lambda: record(b).get("started"))
    until(lambda: ended(b))
    return started - freed


def waiting_cpu(env: dict[str, str], runs: Path, count: int, seconds: float, gpu: bool) -> float:
    """The share of one core that `count` waiting supervisors take together."""
    if gpu:
        args = ["--queue", "--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[1]"]
    else:
        never = runs / "20990101-000000-never-ends"
        never.mkdir(exist_ok=True)
        (never / "run.json").write_text(json.dumps({"id": never.name, "profile": "demo", "status": "running",
                                                    "created": time.time()}))
        args = ["--after", never.name]
    ids = [tuitrain(env, "run", "demo", *args) for _ in range(count)]
    procs = [psutil.Process(record(runs / i)["pids"]["supervisor"]) for i in ids]
    time.sleep(3)  # past their first look
    before = sum(sum(p.cpu_times()[:2]) for p in procs)
    time.sleep(seconds)
    after = sum(sum(p.cpu_times()[:2]) for p in procs)
    for i in ids:
        tuitrain(env, "cancel", i)
    return (after - before) / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--waiting", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="tuitrain-queue-") as tmp:
        runs = Path(tmp) / "runs"
        env = bench_env(TUITRAIN_RUNS_DIR=str(runs), TUITRAIN_QUEUE_DIR=str(Path(tmp) / "queue"),
                        XDG_CONFIG_HOME=str(Path(tmp) / "config"))
        queued, by_hand = [], []
        for _ in range(args.rounds):
            queued.append(queued_round(env, runs))
            by_hand.append(by_hand_round(env, runs))
        table = Table(["from a dependency's end", "to launch, median s", "to first step, median s", "first step, each"])
        for name, values in (("queued --after (starts by itself)", queued),
                             ("tuitrain run by hand at that moment", by_hand)):
            table.add([name, f"{median([v[0] for v in values]):.2f}", f"{median([v[1] for v in values]):.2f}",
                       " ".join(f"{v[1]:.2f}" for v in values)])
        print(table.render())
        freed = [gpu_round(env, runs, Path(tmp) / "nvml.json") for _ in range(args.rounds)]
        gpu_table = Table(["from a GPU freeing", "to launch, median s", "each"])
        gpu_table.add(["queued --queue for that GPU", f"{median(freed):.2f}", " ".join(f"{v:.2f}" for v in freed)])
        print(gpu_table.render())
        cpu = Table(["waiting", "runs", "share of one core"])
        cpu.add(["after a run that goes on", str(args.waiting),
                 f"{waiting_cpu(env, runs, args.waiting, args.seconds, gpu=False):.2%}"])
        gpu_env = {**env, "TUITRAIN_NVML_TABLE": str(ROOT / "tests" / "fixtures" / "nvml" / "four_gpu_mixed.json")}
        cpu.add(["on a taken GPU (recorded table)", str(args.waiting),
                 f"{waiting_cpu(gpu_env, runs, args.waiting, args.seconds, gpu=True):.2%}"])
        print(cpu.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
