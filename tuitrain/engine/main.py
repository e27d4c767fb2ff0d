"""One rank of a run: frozen profile → tokenizer, data, model, metrics, TrainingArguments → Trainer."""

from __future__ import annotations

import os
import sys
import tomllib
import traceback
from pathlib import Path
from typing import Any

from tuitrain.atomic import write_json_atomic
from tuitrain.engine.errors import EngineError
from tuitrain.engine.rank_io import write_rank_record
from tuitrain.profile.implied import implied_training, mixed_precision
from tuitrain.profile.settings import LoraSettings, ModelSettings, Settings
from tuitrain.rundir.disk_space import disk_full, exception_text
from tuitrain.rundir.exits import EXIT_USER_ERROR
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import read_record
from tuitrain.rundir.run import Run


def load_frozen_profile(paths: RunPaths) -> Settings:
    from tuitrain.profile import Profile, settings_with_defaults

    with open(paths.profile, "rb") as handle:
        data = tomllib.load(handle)
    return settings_with_defaults(Profile(path=paths.profile, data=data, notes=[]))


def check_world(expected: int, rank: int) -> int:
    """accelerate can start fewer processes than asked without failing (e.g. --cpu with
    --num_processes 2 starts one): a rank must know it joined the world the plan asked for."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != expected:
        raise EngineError(
            f"rank {rank} joined a world of {world} process(es), but the plan asked for {expected}; "
            "the launcher did not start the ranks it was asked to (check accelerate.yaml in the run directory)"
        )
    return world


def check_strategy_took_effect(trainer: Any, strategy: str, world_size: int) -> None:
    """accelerate falls back without a word (FSDP on a GPU-less rank trains plain DDP): the rank
    checks that what it got is what the plan asked for."""
    got = "fsdp" if trainer.is_fsdp_enabled else "deepspeed" if trainer.is_deepspeed_enabled else None
    wanted = strategy if strategy in ("fsdp", "deepspeed") else None
    if got != wanted:
        raise EngineError(f"distributed.strategy = {strategy!r}, but accelerate set up {got or 'no sharding'} in this rank; "
                          "check accelerate.yaml in the run directory and the devices this rank sees")
    if trainer.accelerator.num_processes != world_size:
        raise EngineError(f"accelerate sees {trainer.accelerator.num_processes} process(es), the plan asked for {world_size}")


def training_arguments(profile: Settings, output_dir: str, world_size: int) -> Any:
    from tuitrain.engine.tasks import arguments_class

    task = profile["model"]["task"]
    training = dict(profile["training"])
    training.setdefault("report_to", "none")
    training.setdefault("disable_tqdm", False)
    # With several ranks, transformers scales the loss by the world size when it averages tokens
    # across devices; a model whose forward ignores num_items_in_batch then logs about
    # world_size × the true loss. Off unless the profile asks for it.
    training.setdefault("average_tokens_across_devices", False)
    hardware = profile["hardware"]
    if hardware["accelerator"] == "cpu":
        training.setdefault("use_cpu", True)
    precision, _key = mixed_precision(profile)  # the one accelerate.yaml says too
    if precision != "no":
        training.setdefault(precision, True)
    for key, (value, _why) in implied_training(profile).items():
        training.setdefault(key, value)
    logging = profile["logging"]
    return arguments_class(task)(
        output_dir=output_dir,
        seed=profile["run"]["seed"],
        log_level=logging["log_level"],
        log_level_replica=logging["log_level_replica"],
        log_on_each_node=logging["log_on_each_node"],
        **training,
    )


def make_output_dir(path: Path) -> None:
    """The checkpoints' folder, made before any training: a path under a file or on a read-only
    filesystem fails here in one line, not at the first save."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EngineError(f"run.output_dir = {str(path)!r}: cannot be created ({exc.strerror or exc}); "
                          "set run.output_dir to a folder you can write") from exc


def build_trainer(run: Run, profile: Settings, rank: int, world_size: int) -> Any:
    from transformers import EarlyStoppingCallback, set_seed

    from tuitrain.engine import tasks
    from tuitrain.engine.callbacks import (
        CheckpointMarkerCallback,
        ControlCallback,
        EventsCallback,
        HeartbeatCallback,
        StepsFromProfileCallback,
    )
    from tuitrain.engine.data import check_splits, raw_splits, training_texts
    from tuitrain.engine.events import EventLog
    from tuitrain.engine.low_rank import check_optim_targets
    from tuitrain.engine.model import build_model
    from tuitrain.engine.rank_io import start_heartbeat
    from tuitrain.engine.tokenizer import build_tokenizer

    paths = run.paths
    model_spec, data_spec, metrics_spec = profile["model"], profile["data"], profile["metrics"]
    task = model_spec["task"]
    output_dir = run.output_dir
    if not output_dir:  # every engine run's record names one (runs.start.new_run); a script run's may not
        raise EngineError(f"{paths.record}: output_dir is not set; start the run again with tuitrain run")
    try:
        args = training_arguments(profile, output_dir, world_size)
    except ValueError as exc:  # TrainingArguments' own consistency checks
        raise EngineError(f"[training]: TrainingArguments refuses it: {str(exc).strip().splitlines()[0]}; "
                          "fix the [training] keys it names") from exc
    base_dir = Path(run.cwd or paths.root)
    if args.local_process_index == 0:  # each machine's: it may not share this folder with the main machine
        make_output_dir(Path(output_dir))

    # The main process goes first (a tokenizer trained here is saved for all); then each machine's local main
    # (where the folder is not shared, it trains the same tokenizer from the same texts); then the other ranks,
    # which read what their machine's main saved. Every rank passes each context's one barrier once.
    with args.main_process_first(local=False, desc="load data and tokenizer"), \
            args.main_process_first(local=True, desc="load data and tokenizer on this machine"):
        train_raw, eval_raw = raw_splits(data_spec, profile["run"]["seed"], base_dir)
        check_splits(train_raw, eval_raw, data_spec, model_spec, getattr(args.eval_strategy, "value", str(args.eval_strategy)))
        tokenizer = build_tokenizer(
            model_spec,
            training_texts(train_raw, data_spec, task),
            Path(output_dir) / "tokenizer",
            is_main=args.local_process_index == 0,
        )
        labels = tasks.tag_names_for(model_spec, data_spec, [s for s in (train_raw, eval_raw) if s is not None])
        train_set = tasks.tokenize_split(task, train_raw, tokenizer, data_spec, labels, "training")
        eval_set = tasks.tokenize_split(task, eval_raw, tokenizer, data_spec, labels, "validation") if eval_raw is not None else None

    # Trainer seeds only in its __init__, after a from-scratch model has drawn its weights: seed
    # here so two runs of one profile start from the same weights.
    set_seed(profile["run"]["seed"])
    if lora := model_spec["lora"]:
        model = build_lora_model(model_spec, lora, tokenizer, output_dir, run.resume_from, args, labels)
    else:
        model = build_model(model_spec, tokenizer, labels=labels)
    check_optim_targets(model, str(getattr(args.optim, "value", args.optim)), args.optim_target_modules)
    events = EventLog(paths.events) if rank == 0 else None
    callbacks: list[Any] = [CheckpointMarkerCallback(run.name, world_size),
                            ControlCallback(paths, events, world_size, can_evaluate=eval_set is not None),
                            StepsFromProfileCallback()]
    if events is not None:
        callbacks.insert(1, EventsCallback(events, run.name, world_size))
    if patience := metrics_spec["early_stopping_patience"]:
        callbacks.append(EarlyStoppingCallback(patience, metrics_spec["early_stopping_threshold"]))
    from tuitrain.engine.faults_for_tests import fault_callbacks

    callbacks += fault_callbacks(run, rank)  # none unless a test asked (its environment)
    callbacks.append(HeartbeatCallback(start_heartbeat(paths.root, rank)))  # last: it reads the step's decisions
    return tasks.trainer_class(task)(
        model=model,
        args=args,
        train_dataset=train_set,
        eval_dataset=eval_set,
        processing_class=tokenizer,
        data_collator=tasks.collator(task, tokenizer, model),
        compute_metrics=tasks.compute_metrics(task, metrics_spec["names"], model_spec, tokenizer, labels),
        callbacks=callbacks,
        class_weights=model_spec["class_weights"],
        report_perplexity="perplexity" in metrics_spec["names"],
    )


def build_lora_model(model_spec: ModelSettings, lora: LoraSettings, tokenizer: Any, output_dir: str,
                     resume_from: str | None, args: Any, labels: list[str] | None = None) -> Any:
    """The base (quantized when [model.lora].quantize says so) with LoRA adapters on it."""
    from tuitrain.engine.lora import (
        LORA_BASE,
        apply_lora,
        base_folder,
        import_peft,
        keep_packing_for_training,
        prepare_quantized,
        quantization_config,
        quantized_layers,
        save_base,
    )
    from tuitrain.engine.model import build_model

    import_peft()  # before anything is built: a missing peft is one line
    task = model_spec["task"]
    quantization = quantization_config(lora, task, bool(args.bf16), bool(args.fp16))
    # a quantized model is placed when loaded (the Trainer does not move it): on this rank's GPU
    placed = {"quantization_config": quantization,
              "device_map": {"": str(args.device)} if args.device.type != "cpu" else None} if quantization else None
    from_scratch = not model_spec["name_or_path"]
    kept = base_folder(output_dir, resume_from) if from_scratch else None
    with args.main_process_first(local=True, desc="keep the LoRA base"):  # a quantized base is read from it
        model = build_model(model_spec, tokenizer, base=kept, labels=labels, quantized=None if from_scratch else placed)
        if args.local_process_index == 0:
            save_base(model, Path(output_dir) / LORA_BASE, from_scratch, resuming=bool(resume_from))
    if quantization is not None:
        if from_scratch:  # weights drawn here exist in full precision only: quantize them as saved
            model = build_model(model_spec, tokenizer, base=kept or Path(output_dir) / LORA_BASE, labels=labels,
                                quantized=placed)
        keep_packing_for_training(model)
        print(f"[tuitrain] base quantized ({lora['quantize']}, bitsandbytes): {quantized_layers(model)} layers", flush=True)
        model = prepare_quantized(model, bool(args.gradient_checkpointing))
    return apply_lora(model, lora, task)


def _report_error(paths: RunPaths, rank: int, message: str) -> None:
    from tuitrain.engine.events import EventLog

    events = EventLog(paths.events)
    events.write("error", None, rank=rank, message=message)
    events.close()


def main(run_dir: Path, rank: int) -> int:
    from tuitrain.rundir import preemption

    preemption.restore_term()
    preemption.install(run_dir, rank)  # under Slurm, its SIGTERM saves a checkpoint and stops
    paths = RunPaths(run_dir)
    exit_code = 1
    run: Run | None = None
    try:
        run = Run(paths, read_record(paths))  # checked, as every reader's
        profile = load_frozen_profile(paths)
        world_size = check_world(run.num_processes, rank)
        from tuitrain.engine.lora import keep_out_bitsandbytes

        keep_out_bitsandbytes(profile)  # before torch and transformers
        import torch

        from tuitrain.engine.device import check_device

        device = check_device(run.accelerator, torch)  # a CUDA run never trains on the CPU unsaid
        # the thread count is part of the speed a user compares with a plain script: say it (plan says why)
        print(f"[tuitrain] rank {rank}/{world_size} pid {os.getpid()} run {run.name} threads {torch.get_num_threads()}",
              flush=True)
        print(f"[tuitrain] rank {rank} trains on {device}", flush=True)
        trainer = build_trainer(run, profile, rank, world_size)
        check_strategy_took_effect(trainer, profile["distributed"]["strategy"], world_size)
        if rank == 0:
            write_json_atomic(paths.training_args, trainer.args.to_dict())
        trainer.train(resume_from_checkpoint=run.resume_from)
        exit_code = 0
    except EngineError as exc:  # a DataError too
        if exc.__cause__ is not None:  # the one line names the fix; the rank log keeps where it came from
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        print(f"[tuitrain] error: {exc}", file=sys.stderr, flush=True)
        _report_error(paths, rank, str(exc))
        exit_code = EXIT_USER_ERROR
    except BaseException as exc:  # noqa: BLE001 — the rank log must keep the traceback, then we exit non-zero
        traceback.print_exc()
        sys.stderr.flush()
        said = f"{type(exc).__name__}: {exc}"
        full = disk_full([run.output_dir if run else None, run_dir], exception_text(exc))
        _report_error(paths, rank, f"{said} — {full}" if full else said)
        exit_code = 130 if isinstance(exc, KeyboardInterrupt) else 1
    finally:
        write_rank_record(paths, rank, exit_code)
    return exit_code
