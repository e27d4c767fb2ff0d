"""Fixed run directories for the app's tests, snapshots and benchmarks (no training needed).

`make_runs(root)` writes a finished 2-rank run (tqdm carriage returns, ANSI colours, two
checkpoints), a failed 2-rank run (a traceback on rank 1) and a running single-rank run, all
with fixed timestamps, so that screenshots of them never change. The tests here check that the
layers under the app read these directories as they read real ones.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
FIXED_CLOCK = T0 + 3600.0
HARDWARE_LINE = "CPU  12% ▋···· 2 cores · RAM 1.5 GiB/23.5 GiB · no NVIDIA GPU"

FINISHED = "20260101-000000-demo"
FAILED = "20260101-001000-demo"
RUNNING = "20260101-002000-demo"


def fixed_time() -> None:
    """Local time is UTC for the tests (the app shows local times)."""
    os.environ["TZ"] = "UTC"
    time.tzset()


def _record(run_dir: Path, run_id: str, status: str, created: float, ranks: int, max_steps: int,
            ended: float | None, pids: dict[str, Any], **extra: Any) -> dict[str, Any]:
    record = {
        "id": run_id, "profile": "demo", "status": status, "created": created, "started": created + 1,
        "ended": ended, "argv": ["python", "-m", "accelerate.commands.launch"], "env": {},
        "num_processes": ranks, "num_machines": 1, "pids": pids, "exit_codes": {}, "failed_rank": None,
        "error": None, "parent": None, "resume_from": None, "output_dir": str(run_dir / "output"),
        "main_process_port": None, "profile_path": None, "cwd": str(run_dir.parent), "accelerator": "cpu",
        "max_steps": max_steps,
    }
    record.update(extra)
    return record


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def _events(created: float, steps: int, eval_every: int, save_every: int, end: str | None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"event": "train_begin", "time": created + 10, "step": 0, "max_steps": 40,
                                     "num_train_epochs": 1, "world_size": 2}]
    for step in range(1, steps + 1):
        t = created + 10 + step * 0.5
        loss = 0.7 * (0.96 ** step) + 0.02 * ((step * 7) % 5) / 5
        events.append({"event": "log", "time": t, "step": step, "loss": round(loss, 4), "grad_norm": 0.5,
                       "learning_rate": round(0.003 * min(1.0, step / 10), 6), "epoch": round(step / 64, 4)})
        if step % eval_every == 0:
            events.append({"event": "evaluate", "time": t + 0.1, "step": step, "eval_loss": round(loss + 0.03, 4),
                           "eval_accuracy": round(min(0.99, 0.5 + step / 80), 4), "eval_f1": round(min(0.98, 0.4 + step / 70), 4),
                           "eval_runtime": 0.2, "eval_samples_per_second": 900.0, "epoch": round(step / 64, 4)})
        if step % save_every == 0:
            events.append({"event": "save", "time": t + 0.2, "step": step,
                           "checkpoint": f"CHECKPOINT-DIR/checkpoint-{step}"})
    if end:
        events.append({"event": end, "time": created + 10 + steps * 0.5 + 1, "step": steps, "max_steps": 40})
    return events


def _safetensors(size: int) -> bytes:
    """A whole safetensors file of exactly `size` bytes: its header, then zero bytes."""
    data = size
    for _ in range(5):  # the header's length depends on the digits of the data's length
        header = json.dumps({"w": {"dtype": "U8", "shape": [data], "data_offsets": [0, data]}}).encode()
        data = size - 8 - len(header)
    return len(header).to_bytes(8, "little") + header + b"\0" * data


def _torch_file(name: str, size: int) -> bytes:
    """A whole zip archive (what torch.save writes) of exactly `size` bytes, made without torch."""
    import io
    import zipfile

    inner = f"{name}/data.pkl"
    overhead = 30 + 46 + 2 * len(inner) + 22  # local header, central directory entry, end record
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(zipfile.ZipInfo(inner, date_time=(2026, 1, 1, 0, 0, 0)), b"\0" * (size - overhead))
    assert len(buffer.getvalue()) == size
    return buffer.getvalue()


def _checkpoint(output: Path, step: int, events: list[dict[str, Any]], complete: bool = True) -> None:
    """A 2-rank checkpoint whose files are whole (tuitrain checks them), sealed with its marker;
    an incomplete one was cut short: no optimizer, scheduler or marker."""
    from tuitrain.rundir.checkpoints import MARKER, files_with_sizes

    folder = output / f"checkpoint-{step}"
    history = [{k: v for k, v in e.items() if k not in ("event", "time")} for e in events
               if e["event"] in ("log", "evaluate") and e["step"] <= step]
    _write(folder / "trainer_state.json", json.dumps({"global_step": step, "log_history": history}, sort_keys=True))
    _write(folder / "config.json", '{"model_type": "bert"}\n')
    _write(folder / "model.safetensors", _safetensors(98_304))
    for rank in range(2):
        _write(folder / f"rng_state_{rank}.pth", _torch_file(f"rng_state_{rank}", 1_024))
    if not complete:
        return
    _write(folder / "scheduler.pt", _torch_file("scheduler", 1_024))
    _write(folder / "optimizer.pt", _torch_file("optimizer", 196_608 - 3 * 1_024))
    marker = {"run": output.parent.name, "step": step, "world_size": 2, "time": T0, "files": files_with_sizes(folder)}
    _write(folder / MARKER, json.dumps(marker, sort_keys=True))


def _rank_log(rank: int, steps: int, failed: bool = False) -> bytes:
    lines = [f"[tuitrain] rank {rank}/2 pid {4000 + rank} run fixture".encode()]
    lines.append(b"\rMap:   0%|          | 0/2000 [00:00<?, ? examples/s]"
                 b"\rMap: 100%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 2000/2000 [00:00<00:00, 5000 examples/s]")
    lines.append(b"\x1b[32m[transformers]\x1b[0m ***** Running training *****")
    for step in range(1, steps + 1):
        bar = b"\xe2\x96\x88" * (step * 10 // 40)
        lines.append(b"\r%3d%%|%-10s| %d/40 [00:%02d<00:10, 2.00it/s]\r                    \r{'loss': '%.4f', 'epoch': '%.3f'}"
                     % (step * 100 // 40, bar, step, step // 2, 0.7 * (0.96 ** step), step / 64))
        if step % 10 == 0:
            lines.append(b"\x1b[33mwarning\x1b[0m: step %d: a yellow warning from rank %d" % (step, rank))
    if failed:
        lines += [b"Traceback (most recent call last):",
                  b'  File "tuitrain/engine/main.py", line 120, in main',
                  b"    trainer.train()",
                  b'  File "transformers/trainer.py", line 2300, in train',
                  b"    loss = self.training_step(model, inputs)",
                  b"RuntimeError: CUDA error: out of memory (a fixture's error)"]
    return b"\n".join(lines) + b"\n"


def make_runs(root: Path) -> dict[str, Path]:
    """Three run directories under `root` (made afresh); returns them by id."""
    root.mkdir(parents=True, exist_ok=True)
    made = {}
    specs = [
        (FINISHED, "finished", T0, 40, "train_end", False),
        (FAILED, "failed", T0 + 600, 17, None, True),
        (RUNNING, "running", T0 + 1200, 23, None, False),
    ]
    for run_id, status, created, steps, end, failed in specs:
        run_dir = root / run_id
        output = run_dir / "output"
        ranks = 1 if status == "running" else 2
        events = _events(created, steps, eval_every=10, save_every=10, end=end)
        for e in events:
            if e["event"] == "save":
                e["checkpoint"] = e["checkpoint"].replace("CHECKPOINT-DIR", str(output))
            if e["event"] == "train_begin":
                e["world_size"] = ranks
        ended = created + 40 if status in ("finished", "failed") else None
        pids = {"supervisor": os.getpid()} if status == "running" else {"supervisor": 4_000_000}
        extra = {"failed_rank": 1, "exit_codes": {"launcher": 1, "0": -15, "1": 1}} if failed else {}
        _write(run_dir / "run.json", json.dumps(_record(run_dir, run_id, status, created, ranks, 40, ended, pids, **extra),
                                                indent=2))
        _write(run_dir / "events.jsonl", "".join(json.dumps(e) + "\n" for e in events))
        _write(run_dir / "profile.toml", '[run]\nname = "demo"\n\n[training]\nmax_steps = 40\n')
        (run_dir / "control").mkdir(exist_ok=True)
        for rank in range(ranks):
            _write(run_dir / "logs" / f"rank-{rank}.log", _rank_log(rank, steps, failed=failed and rank == 1))
        _write(run_dir / "logs" / "launcher.log", "[supervisor] started\n")
        for e in events:
            if e["event"] == "save":
                _checkpoint(output, e["step"], events)
        if status == "running":
            bar = b"\r 57%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88     | 23/40 [00:11<00:08, 2.00it/s]"
            _write(run_dir / "logs" / "rank-0.log", _rank_log(0, steps) + bar)
        made[run_id] = run_dir
    # a half-written checkpoint of the failed run (killed during a save)
    _checkpoint(root / FAILED / "output", 15, _events(T0 + 600, 17, 10, 10, None), complete=False)
    for path in sorted(root.rglob("*"), reverse=True):
        os.utime(path, (T0, T0), follow_symlinks=False)
    return made


# ------------------------------------------------------------------------------ the fixtures read as real runs

def test_fixture_runs_read_like_real_ones(tmp_path):
    from tuitrain.rundir.checkpoints import list_checkpoints
    from tuitrain.runs.catalog import list_runs
    from tuitrain.runs.view.summary import run_summary

    made = make_runs(tmp_path / "runs")
    runs = {paths.id: run_summary(paths, record) for paths, record in list_runs(tmp_path / "runs")}
    assert set(runs) == set(made)
    assert runs[FINISHED]["progress"]["step"] == 40 and runs[FINISHED]["status"] == "finished"
    assert runs[FAILED]["traceback"][0].startswith("Traceback") and runs[FAILED]["failed_rank"] == 1
    checkpoints = list_checkpoints(made[FAILED] / "output")
    assert [(c.step, c.complete) for c in checkpoints] == [(10, True), (15, False)]


def test_runs_watcher_follows_and_announces(tmp_path):
    from tuitrain.backends import settle_runs
    from tuitrain.runs.view.live import RunsWatcher

    made = make_runs(tmp_path / "runs")
    watcher = RunsWatcher(tmp_path / "runs", settle_runs)
    rows, changes = watcher.poll()
    assert [r.id for r in rows] == [RUNNING, FAILED, FINISHED] and changes == []
    running = {r.id: r for r in rows}[RUNNING]
    assert (running.status, running.step, running.max_steps, running.best_metric) == ("running", 23, 40, "eval_loss")
    with open(made[RUNNING] / "events.jsonl", "a") as handle:
        handle.write(json.dumps({"event": "save", "time": T0 + 2000, "step": 24,
                                 "checkpoint": str(made[RUNNING] / "output" / "checkpoint-24")}) + "\n")
    record = json.loads((made[RUNNING] / "run.json").read_text())
    record.update(status="failed", failed_rank=0, ended=T0 + 2001)
    (made[RUNNING] / "run.json").write_text(json.dumps(record))
    os.utime(made[RUNNING] / "run.json", (T0 + 5, T0 + 5))
    rows, changes = watcher.poll()
    assert [(c.kind, c.run_id, c.detail) for c in changes] == [
        ("checkpoint", RUNNING, "checkpoint-24"), ("failed", RUNNING, "rank 0 failed")]
    assert watcher.poll()[1] == []


def test_log_file_index_reads_only_new_bytes_and_shows_what_a_terminal_shows(tmp_path):
    from tuitrain.runs.view.logfile import LogFile, display_text
    from tuitrain.runs.view.merged_log import MergedLog

    made = make_runs(tmp_path / "runs")
    log = LogFile(made[FAILED] / "logs" / "rank-1.log")
    assert log.update() > 0 and not log.has_partial
    texts = [log.line_text(i) for i in range(log.count)]
    assert texts[1] == "Map: 100%|███| 2000/2000 [00:00<00:00, 5000 examples/s]"
    assert texts[3].startswith("{'loss': ")
    assert log.find(b"traceback (most recent") == texts.index("Traceback (most recent call last):")
    with open(log.path, "ab") as handle:
        handle.write(b"more\npartial \r 50%")
    assert log.update() == 1 and log.has_partial and log.line_text(log.count - 1) == " 50%"
    assert display_text(b"\x1b[31mred\x1b[0m\r\n") == "\x1b[31mred\x1b[0m"
    merged = MergedLog([LogFile(made[FINISHED] / "logs" / f"rank-{r}.log") for r in range(2)])
    for f in merged.files:
        f.update()
    merged.sync()
    assert merged.count == sum(f.line_count for f in merged.files)
    assert {merged.raw(i)[0] for i in range(merged.count)} == {0, 1}
    hit = merged.find(b"from rank 1")
    assert merged.raw(hit) == (1, b"\x1b[33mwarning\x1b[0m: step 10: a yellow warning from rank 1")


def test_lines_every_rank_prints_alike_fold_into_one_marked_with_the_ranks(tmp_path):
    from tuitrain.runs.view.logfile import LogFile
    from tuitrain.runs.view.merged_log import FoldedLog, MergedLog, rank_label

    common = [b"loading model", b"step 1 loss 0.9", b"step 2 loss 0.8"]
    logs = []
    for rank in range(4):
        lines = list(common)
        if rank == 2:
            lines.insert(2, b"WARNING: rank 2 saw a NaN")
        path = tmp_path / f"rank-{rank}.log"
        path.write_bytes(b"\n".join(lines) + b"\n")
        logs.append(LogFile(path))
    merged = MergedLog(logs)
    folded = FoldedLog(merged)
    for log in logs:
        log.update()
    merged.sync()
    folded.sync()
    shown = [(rank, line) for rank, line in (folded.raw(i) for i in range(folded.count))]
    # a folded line stands where its first copy stands in the merged order (ranks' blocks, then arrival)
    assert shown == [("0-3", b"loading model"), ("0-3", b"step 1 loss 0.9"), ("0-3", b"step 2 loss 0.8"),
                     (2, b"WARNING: rank 2 saw a NaN")]
    assert folded.find(b"nan") == 3 and folded.find(b"step 2") == 2 and folded.find(b"step", 2) == 2
    assert folded.find(b"step", 3) is None and folded.find(b"step", 3, backwards=True) == 2
    assert folded.find(b"step", 1, backwards=True) == 1 and folded.find(b"step", 0, backwards=True) is None
    # lines arriving later fold too; a rank that repeats itself is not folded into its own line
    with open(logs[0].path, "ab") as handle:
        handle.write(b"saving\nsaving\n")
    with open(logs[3].path, "ab") as handle:
        handle.write(b"saving\n")
    for log in logs:
        log.update()
    merged.sync()
    folded.sync()
    assert [folded.raw(i) for i in range(4, folded.count)] == [("0,3", b"saving"), (0, b"saving")]
    assert rank_label([0, 1, 2, 3, 5, 7, 8]) == "0-3,5,7-8"
    # a long log folds over several syncs, a budget at a time
    budgeted = FoldedLog(merged, budget=5)
    budgeted.sync()
    assert budgeted.pending == len(merged.lines) - 5
    while budgeted.pending:
        budgeted.sync()
    assert [budgeted.raw(i) for i in range(budgeted.count)] == [folded.raw(i) for i in range(folded.count)]
