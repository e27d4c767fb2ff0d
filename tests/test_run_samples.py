"""Every run keeps its GPU/CPU samples (issue 28, item 8): machines/machine-M-samples.json, written by the
supervisor's sampling thread, bounded in size; shown by the monitor's GPUs tab, as curves in Compare, and turned into
hints (input-bound, launch-bound, GPU memory far from full) by one rule, tuitrain.runs.view.usage.usage_hints."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from conftest import cli, record, wait_for, wait_until_ended
from tuitrain.runs.keeper.samples import MAX_BUCKETS, SampleLog, parse, read_run_samples, samples_path, scan_run_samples
from tuitrain.runs.view.usage import BUSY_RANK, IDLE_GPU, MIN_SECONDS, WAIT_SHARE, summarise, usage_hints

NVML_TABLE = Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json"
GPU = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total": 81559}  # MiB
META = {"machine_rank": 0, "host": "box", "run_id": "r", "cpu_count": 16, "memory_total": 257000, "gpus": [GPU],
        "ranks": [0]}


def machine(points: list[tuple[float, dict[str, float | None]]], max_buckets: int = MAX_BUCKETS):
    log = SampleLog(2.0, max_buckets, meta=META)
    for when, values in points:
        log.add(when, values)
    parsed = parse(json.loads(json.dumps(log.to_json())))
    assert parsed is not None
    return {0: parsed}


def steady(util: float | None, cpu: float, memory: float | None, seconds: float = 60.0, start: float = 1000.0,
           wait: float | None = None):
    values = {"gpu.0.util": util, "gpu.0.mem": memory, "rank.0.cpu": cpu, "host.cpu": 20.0, "rank.0.wait": wait}
    return [(start + t, values) for t in range(0, int(seconds), 2)]


# ---------------------------------------------------------------------------------------------- the file
def test_the_samples_stay_bounded_and_keep_means_and_peaks():
    """A week at one sample every 2 s: at most MAX_BUCKETS buckets, a file of a few KiB a series; the whole-run
    mean and a one-sample peak survive the merging."""
    log = SampleLog(2.0, meta=META)
    count = 7 * 24 * 1800
    for i in range(count):
        log.add(1000.0 + 2 * i, {"gpu.0.util": 40.0 if i % 2 else 60.0, "gpu.0.mem": 99999.0 if i == 123457 else 1000.0,
                                 "rank.0.cpu": None if i < 10 else 100.0})
    data = log.to_json()
    text = json.dumps(data, separators=(",", ":"))
    assert len(data["time"]) <= MAX_BUCKETS and sum(data["count"]) == data["samples"] == count
    assert len(text) < 3 * 8 * 2 * MAX_BUCKETS + 2000, len(text)  # ~8 characters a figure, mean and max, 3 series
    parsed = parse(json.loads(text))
    assert parsed is not None
    usage = summarise({0: parsed}, None)
    assert abs((usage.gpus[0].util_mean or 0) - 50.0) < 0.5
    assert usage.gpus[0].memory_peak == 99999 and usage.ranks[0].cpu_mean == 100.0
    # a sampler started again in the same run directory (a requeued Slurm job) goes on with the same file
    again = SampleLog.from_json(data)
    again.add(1000.0 + 2 * count, {"gpu.0.util": 50.0})
    assert again.samples == count + 1 and len(again.buckets) <= MAX_BUCKETS


def test_a_damaged_or_foreign_file_is_left_out(tmp_path):
    (tmp_path / "machines").mkdir()
    samples_path(tmp_path, 0).write_text('{"format": 1, "time": [1')
    samples_path(tmp_path, 1).write_text(json.dumps({"format": 99}))
    log = SampleLog(2.0, meta={**META, "machine_rank": 2})
    log.add(1.0, {"host.cpu": 5.0})
    samples_path(tmp_path, 2).write_text(json.dumps(log.to_json()))
    assert list(read_run_samples(tmp_path)) == [2]
    assert scan_run_samples(tmp_path)[1] == {
        0: f"{samples_path(tmp_path, 0)}: not valid JSON: Expecting ',' delimiter at line 1 column 25",
        1: f"{samples_path(tmp_path, 1)}: format: 99 is not one of 1"}


@pytest.mark.parametrize(("change", "said"), [
    ({"cpu_count": "16"}, "cpu_count: '16' is not a whole number"),
    ({"samples": 2**70}, "samples: 1180591620717411303424 is not a whole number"),
    ({"time": None}, "time: null is not a list"), ({"ranks": "0,1"}, "ranks: '0,1' is not a list"),
    ({"count": [1, 1]}, "count, series: not one value for each of the 1 times"),
    ({"series": {"host.cpu": {"mean": [5.0]}}}, "no series.host.cpu.max"),
])
def test_a_damaged_samples_file_is_named_in_one_line_and_hides_nothing(runs_dir, change, said):
    from test_manifest import two_machine_run
    from test_run_record_property import quiet

    run = two_machine_run(runs_dir, "20260101-000000-two", "2.3.1")
    for rank in (0, 1):
        log = SampleLog(2.0, meta={**META, "machine_rank": rank})
        log.add(1000.0, {"host.cpu": 5.0})
        samples_path(run, rank).write_text(json.dumps({**log.to_json(), **(change if rank else {})}))
    samples, damaged = scan_run_samples(run)
    assert list(samples) == [0] and damaged == {1: f"{samples_path(run, 1)}: {said}"}
    code, text = quiet("status", run.name, "--runs-dir", str(runs_dir))
    assert code == 0 and f"samples    machine 1's are damaged: {samples_path(run, 1)}: {said}\n" in text, text
    assert "usage      1 samples over" in text, text  # machine 0's, as ever
    code, text = quiet("status", run.name, "--json", "--runs-dir", str(runs_dir))
    assert code == 0 and json.loads(text)["damaged_samples"] == {"1": f"{samples_path(run, 1)}: {said}"}
    from tuitrain.rundir.layout import RunPaths
    from tuitrain.rundir.record import read_record
    from tuitrain.tui.widgets.gpu_panel import run_panel

    for live in (True, False):  # the app's GPUs tab says it as `status` does, while the run trains and after
        shown = run_panel(None, read_record(RunPaths(run)), run.name, live=live, run_dir=run).plain
        assert f"samples: machine 1's are damaged: {samples_path(run, 1)}: {said}\n" in shown, shown


# ---------------------------------------------------------------------------------------------- the hints
def test_input_bound_is_a_rank_that_waits_for_its_batches_while_its_gpu_idles():
    samples = machine(steady(util=7.0, cpu=98.0, memory=60000.0, wait=62.0))
    hints = usage_hints(summarise(samples, (1000.0, 1060.0)), {"dataloader_num_workers": 0,
                                                               "dataloader_pin_memory": False})
    assert [h.kind for h in hints] == ["input-bound"]
    text = hints[0].text
    assert "rank 0 waited for its next batch 62 % of its step time while its GPU was 7 % busy" in text, text
    assert "100% of the training" in text
    assert "training.dataloader_num_workers = " in text and "(now 0)" in text
    assert "training.dataloader_pin_memory = true" in text
    assert "tokenising" not in text  # a profile's run tokenises up front already
    script = usage_hints(summarise(samples, (1000.0, 1060.0)), {}, script=True)
    assert "tokenising the data set once" in script[0].text


def test_launch_bound_is_an_idle_gpu_beside_a_saturated_rank_that_hardly_waits():
    """The figures of issue 35's H100 run (a BERT-base-sized model on MRPC tokenised in memory, batch 32: 86 ms a
    step for ~13 ms of GPU work, 3.8 GiB of 80): it was told 'input-bound, try 8 workers', which made it 12 s slower.
    It is launch-bound, and each piece of advice comes with the figure it rests on."""
    samples = machine(steady(util=15.0, cpu=100.0, memory=3.8 * 1024, wait=3.5))
    settings = {"per_device_train_batch_size": 32, "torch_compile": False, "logging_steps": 1,
                "dataloader_num_workers": 0}
    hints = usage_hints(summarise(samples, (1000.0, 1060.0)), settings)
    assert [h.kind for h in hints] == ["launch-bound"]  # the memory hint is part of it
    text = hints[0].text
    assert "the GPU was 15 % busy while rank 0's CPU ran at 100 % of a core and waited for its next batch only 4 %" \
        in text, text
    assert "dataloader_num_workers" not in text.split("Try")[-1]
    assert "training.per_device_train_batch_size = 64 (now 32): fewer steps for the same data (GPU memory peaked " \
        "at 3.8 of 79.6 GiB (5%))" in text, text
    assert "training.torch_compile = true (now false)" in text
    assert "training.logging_steps = 50 (now 1)" in text
    assert hints[0].settings == (("training.per_device_train_batch_size", 64), ("training.torch_compile", True),
                                 ("training.logging_steps", 50))  # what `--set` takes, advice by advice
    # what was not read is not advised: no settings, no memory figure
    bare = usage_hints(summarise(machine(steady(util=15.0, cpu=100.0, memory=None, wait=3.5)), (1000.0, 1060.0)))
    assert [h.kind for h in bare] == ["launch-bound"] and "Try" not in bare[0].text
    compiled = usage_hints(summarise(samples, (1000.0, 1060.0)), {**settings, "torch_compile": True, "logging_steps": 50})
    assert "torch_compile" not in compiled[0].text and "logging_steps" not in compiled[0].text


def test_without_the_wait_measured_no_bound_hint_is_guessed():
    """A run sampled by an older tuitrain (no rank.R.wait): an idle GPU beside a saturated rank is either; neither
    is said."""
    assert usage_hints(summarise(machine(steady(util=7.0, cpu=98.0, memory=60000.0)), (1000.0, 1060.0))) == []


def test_on_the_cpu_the_wait_alone_tells_input_bound():
    meta = {**META, "gpus": []}
    for wait, kinds in ((WAIT_SHARE + 20, ["input-bound"]), (WAIT_SHARE - 25, [])):
        log = SampleLog(2.0, meta=meta)
        for when in range(1000, 1060, 2):
            log.add(float(when), {"rank.0.cpu": 100.0, "host.cpu": 50.0, "rank.0.wait": wait})
        parsed = parse(json.loads(json.dumps(log.to_json())))
        assert parsed is not None
        hints = usage_hints(summarise({0: parsed}, (1000.0, 1060.0)), {"dataloader_num_workers": 0})
        assert [h.kind for h in hints] == kinds
        assert all("GPU" not in h.text and "pin_memory" not in h.text for h in hints)


def test_no_hint_for_a_busy_gpu_an_idle_rank_a_short_run_or_the_setup_before_training():
    assert usage_hints(summarise(machine(steady(util=95.0, cpu=100.0, memory=60000.0, wait=40.0)), (1000.0, None))) == []
    assert usage_hints(summarise(machine(steady(util=IDLE_GPU - 40, cpu=BUSY_RANK - 40, memory=60000.0, wait=2.0)),
                                 (1000.0, None))) == []
    short = machine(steady(util=5.0, cpu=100.0, memory=60000.0, seconds=MIN_SECONDS - 4, wait=60.0))
    assert usage_hints(summarise(short, (1000.0, None))) == []
    # 60 s of setup (GPU idle, rank at 100 % loading the model), then 60 s of busy training: no hint
    phases = machine(steady(util=0.0, cpu=100.0, memory=60000.0) + steady(95.0, 100.0, 60000.0, start=1060.0, wait=2.0))
    assert usage_hints(summarise(phases, (1060.0, 1120.0))) == []
    assert usage_hints(summarise(phases, None)) == []  # a run that never said train_begin: not judged


def test_a_gpu_far_from_full_suggests_a_larger_batch():
    hints = usage_hints(summarise(machine(steady(util=95.0, cpu=50.0, memory=9800.0)), (1000.0, None)),
                        {"per_device_train_batch_size": 32})
    assert [h.kind for h in hints] == ["memory"]
    assert "peaked at 9.6 of 79.6 GiB (12%)" in hints[0].text
    assert "training.per_device_train_batch_size = 64 (now 32)" in hints[0].text


# ---------------------------------------------------------------------------------------------- a real run
def test_a_real_run_keeps_its_samples_and_every_view_shows_them(runs_dir, monkeypatch):
    """A real run on GPU 0 of a recorded machine (NVML answers from the table; the demo model trains on the CPU):
    its supervisor samples it; once stopped, the file holds GPU, rank and host series over the training time, in a
    bounded size; `tuitrain status` says so with the hint the samples call for (the table's GTX 1080 Ti holds
    0.4 of 11 GiB); the monitor's GPUs tab shows them and Compare offers them as curves."""
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(NVML_TABLE))
    started = cli("run", "demo", "--detach", "--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[0]",
                  "--set", "training.max_steps=1000000", "--set", "training.eval_strategy=no",
                  "--set", "training.save_strategy=no", "--set", "training.logging_steps=20", runs_dir=runs_dir)
    assert started.returncode == 0, started.stderr
    run_dir = runs_dir / started.stdout.strip().splitlines()[-1]
    file = samples_path(run_dir, 0)

    def trained_long_enough() -> bool:
        begin = [json.loads(line)["time"] for line in (run_dir / "events.jsonl").read_text().splitlines()
                 if '"train_begin"' in line] if (run_dir / "events.jsonl").exists() else []
        found = read_run_samples(run_dir).get(0)
        return bool(begin and found and found.last and found.last - begin[0] > MIN_SECONDS + 4)

    wait_for(trained_long_enough, timeout=240, what="samples over more than MIN_SECONDS of training")
    assert cli("stop", run_dir.name, runs_dir=runs_dir).returncode == 0
    assert wait_until_ended(run_dir)["status"] == "stopped"
    data = json.loads(file.read_text())
    assert data["machine_rank"] == 0 and data["run_id"] == run_dir.name and data["ranks"] == [0]
    assert [g["index"] for g in data["gpus"]] == [0] and data["gpus"][0]["name"] == "NVIDIA GeForce GTX 1080 Ti"
    assert {"gpu.0.util", "gpu.0.mem", "rank.0.cpu", "rank.0.rss", "host.cpu", "host.mem"} <= set(data["series"])
    assert data["samples"] >= 5 and len(data["time"]) <= MAX_BUCKETS
    assert data["series"]["gpu.0.mem"]["max"][-1] == 412  # the table's 432013312 bytes
    assert record(run_dir)["ended"] >= data["last"]  # written before run.json said the run ended
    assert file.stat().st_size < 64 * 1024

    status = cli("status", run_dir.name, runs_dir=runs_dir).stdout
    assert "usage      " in status and "GPU 0    util 0% mean" in status and "rank 0   CPU" in status, status
    assert "hint       " in status and "GPU memory peaked at 0.4 of 11.0 GiB" in status, status
    as_json = json.loads(cli("status", run_dir.name, "--json", runs_dir=runs_dir).stdout)
    # the memory hint, or "launch-bound" quoting the same peak when the machine gives the rank a whole core (the
    # table's GPU is idle, the rank hardly waits for its batches): a matter of load here, tested on data above
    kinds = [h["kind"] for h in as_json["usage"]["hints"]]
    assert "memory" in kinds or "launch-bound" in kinds, kinds
    assert as_json["usage"]["ranks"][0]["wait_mean"] is not None  # the wait is measured in every run

    from test_tui_app import make_app, until
    from test_tui_multinode import open_monitor
    from tuitrain.tui.screens.compare import CompareScreen

    app = make_app(runs_dir.parent)

    async def main() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            monitor = await open_monitor(pilot, run_dir.name)
            await pilot.press("u")
            panel = monitor.query_one("#gpus")
            await until(pilot, lambda: "while it ran" in str(panel.content), what="the run's samples")
            text = str(panel.content)
            assert "GPU 0  NVIDIA GeForce GTX 1080 Ti" in text and "0.4/11.0 GiB peak" in text, text
            assert "rank 0  CPU" in text and "hint: " in text and "GPU memory peaked at 0.4" in text, text
            await pilot.press("escape")
            app.push_screen(CompareScreen([(run_dir, "demo")]))
            await until(pilot, lambda: type(app.screen).__name__ == "CompareScreen", what="compare")
            compare = app.screen
            await until(pilot, lambda: "gpu util %" in compare.metrics, timeout=20, what="the GPU curves")
            assert {"gpu memory GiB", "rank cpu %"} <= set(compare.metrics)
            compare.metric = "gpu memory GiB"
            compare.draw()
            curve = compare.query_one("#overlay").curves[0]
            assert set(curve.ys) == {412 / 1024}

    asyncio.run(main())
    assert os.environ.get("TUITRAIN_NVML_TABLE") == str(NVML_TABLE)


# ---------------------------------------------------------------------------------------------- the wait, measured
def test_the_heartbeat_keeps_the_wait_and_the_steps_it_belongs_to(tmp_path, monkeypatch):
    """From a step's end to the next one's begin is the wait; a step with an evaluation before it is not timed whole."""
    from tuitrain.engine import rank_io
    from tuitrain.rundir.heartbeat import beat_from
    from tuitrain.rundir.layout import PHASE_BETWEEN, PHASE_EVALUATING, PHASE_STEP, RunPaths

    clock = iter([0.0, 1.0, 1.3, 2.0, 2.1, 3.0, 3.5, 4.0, 4.2, 5.0])
    monkeypatch.setattr(rank_io.time, "time", lambda: next(clock))
    beat = rank_io.Heartbeat(RunPaths(tmp_path), 0, interval=3600)
    for phase in (PHASE_STEP, PHASE_BETWEEN, PHASE_STEP, PHASE_BETWEEN,  # 0-1, then waits 0.3 for a 1.0 s step
                  PHASE_STEP, PHASE_BETWEEN, PHASE_EVALUATING,  # waits 0.1 for a 1.0 s step, then evaluates
                  PHASE_BETWEEN, PHASE_STEP, PHASE_BETWEEN):  # after the evaluation: waits 0.2 for a 1.0 s step
        beat.beat(phase, 1)
    read = beat_from(beat.record())
    assert read is not None
    assert read.waited_seconds == pytest.approx(0.6) and read.stepped_seconds == pytest.approx(3.0)


def test_the_sampler_turns_the_totals_into_each_looks_share():
    from tuitrain.rundir.heartbeat import Beat
    from tuitrain.runs.keeper.samples import WaitShares

    shares = WaitShares()

    def look(pid: int, waited: float | None, stepped: float | None) -> dict[str, float | None]:
        return shares.values({0: Beat(0, "step", 0.0, 0.0, pid=pid, waited_seconds=waited, stepped_seconds=stepped)},
                             [0, 1])

    assert look(10, 1.0, 4.0) == {"rank.0.wait": 25.0}  # since the rank began; rank 1 has no heartbeat: no figure
    assert look(10, 4.0, 8.0) == {"rank.0.wait": 75.0}  # this look's steps only
    assert look(10, 4.0, 8.0) == {"rank.0.wait": None}  # no whole step since (an evaluation, a save, a hang)
    assert look(11, 0.5, 5.0) == {"rank.0.wait": 10.0}  # a new process of rank 0 (a requeued job): its own totals
    assert look(11, None, None) == {}  # an older tuitrain's heartbeat


SLOW_BATCHES = Path(__file__).parent / "fixtures" / "scripts" / "slow_batches.py"


def slow_run(tmp_path: Path, runs_dir: Path, name: str, *args: str) -> Path:
    """A run of slow_batches.py with `args`, started (detached)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "slow_batches.py").write_text(SLOW_BATCHES.read_text())
    listed = ", ".join(json.dumps(a) for a in args)
    (folder / "p.toml").write_text(f'[script]\npath = "slow_batches.py"\nargs = [{listed}]\n\n'
                                   '[hardware]\naccelerator = "cpu"\n')
    done = cli("run", str(folder / "p.toml"), "--detach", runs_dir=runs_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    return runs_dir / done.stdout.strip()


def usage_at_its_end(run: Path, runs_dir: Path) -> dict:
    rec = wait_until_ended(run, 300)
    assert rec["status"] == "finished", (rec, (run / "logs" / "rank-0.log").read_text()[-2000:])
    return json.loads(cli("status", run.name, "--json", runs_dir=runs_dir).stdout)["usage"]


@pytest.mark.slow
def test_a_real_run_with_a_slow_data_loader_is_input_bound_and_one_with_a_slow_step_is_not(tmp_path, runs_dir):
    """Two real runs of one Trainer script on the CPU, over more than MIN_SECONDS of training each: one whose collator
    sleeps 0.25 s a batch, one whose forward does. The first waits for its batches most of its step time and is
    told to add workers; the second hardly waits and is told nothing of its data. Both train at once: each sleeps
    most of its time, and what is measured is each rank's own wait."""
    loader_run = slow_run(tmp_path, runs_dir, "slow-loader", "--collate_sleep", "0.25", "--max_steps", "60")
    step_run = slow_run(tmp_path, runs_dir, "slow-step", "--step_sleep", "0.25", "--max_steps", "60")
    loader, step = usage_at_its_end(loader_run, runs_dir), usage_at_its_end(step_run, runs_dir)
    assert [h["kind"] for h in loader["hints"]] == ["input-bound"], loader
    assert "rank 0 waited for its next batch" in loader["hints"][0]["text"]
    assert "training.dataloader_num_workers = " in loader["hints"][0]["text"]
    assert loader["ranks"][0]["wait_mean"] >= 2 * WAIT_SHARE, loader["ranks"]
    assert step["hints"] == [] and step["ranks"][0]["wait_mean"] < WAIT_SHARE / 3, step
