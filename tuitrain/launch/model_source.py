"""Where the memory estimate reads a profile's model from, without loading it: [model.config] (a model built from
a config), a model folder's config.json, or a Hub model's config.json in the Hugging Face cache of this machine
(nothing is downloaded). The one part of the estimate that reads files; tuitrain.launch.memory does the arithmetic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuitrain.launch.memory import MemorySetup, memory_setup
from tuitrain.launch.model_size import ModelShape, Unknown, model_shape
from tuitrain.profile.model_config import config_keys
from tuitrain.profile.paths import is_relative_local
from tuitrain.profile.rules.strategies import read_deepspeed_json
from tuitrain.profile.settings import Settings

# what the estimate reads of [training] when it leaves them out: TrainingArguments' defaults
TRAINING_KEYS = ("per_device_train_batch_size", "gradient_accumulation_steps", "gradient_checkpointing", "optim")


@dataclass(frozen=True)
class ModelConfig:
    """A profile's model config as the estimate reads it: `config` (None: not found, `why`), and where it came from."""

    config: dict[str, Any] | None
    where: str = ""
    why: str | None = None
    defaults: dict[str, Any] = field(default_factory=dict)  # the model type's config defaults (transformers')


def hub_cache() -> Path:
    """The Hugging Face hub cache folder, as huggingface_hub finds it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "huggingface" / "hub"


def cached_config(model_id: str, cache: Path | None = None) -> Path | None:
    """config.json of Hub model `model_id` in the cache: the snapshot refs/main names, else the newest one."""
    folder = (cache or hub_cache()) / ("models--" + model_id.replace("/", "--"))
    try:
        ref = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        ref = ""
    if ref and (folder / "snapshots" / ref / "config.json").is_file():
        return folder / "snapshots" / ref / "config.json"
    try:
        found = [p for p in (folder / "snapshots").glob("*/config.json") if p.is_file()]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _read_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"{path} cannot be read as JSON ({type(exc).__name__})"
    return (loaded, None) if isinstance(loaded, dict) else (None, f"{path} holds no JSON object")


def _defaults(config: Mapping[str, Any] | None) -> dict[str, Any]:
    model_type = (config or {}).get("model_type")
    if not isinstance(model_type, str):
        return {}
    return {key: spec.default for key, spec in config_keys(model_type).items() if spec.default is not None}


def read_model_config(settings: Settings, base_dir: Path | None) -> ModelConfig:
    """The config of the model `settings` (a profile with defaults) trains; relative folders start from `base_dir`."""
    if settings.get("script"):
        return ModelConfig(None, why="a [script] builds its own model")
    model = settings["model"]
    source = model.get("name_or_path") or ""
    if not source:
        inline = model.get("config")
        if not isinstance(inline, dict):
            return ModelConfig(None, why="the profile names no model")
        return ModelConfig(dict(inline), "[model.config]", defaults=_defaults(inline))
    path = Path(source).expanduser()
    if not path.is_absolute() and is_relative_local(source, "if_exists", base_dir or Path.cwd()):
        path = (base_dir or Path.cwd()) / path
    if path.is_absolute() or path.exists():
        if not (path / "config.json").is_file():
            return ModelConfig(None, why=f"{path} has no config.json")
        config, why = _read_json(path / "config.json")
        return ModelConfig(config, str(path / "config.json"), why, _defaults(config))
    found = cached_config(source)
    if found is None:
        return ModelConfig(None, why=f"the config of Hub model {source!r} is not in this machine's Hugging Face cache "
                                     f"({hub_cache()}) yet")
    config, why = _read_json(found)
    return ModelConfig(config, f"the Hugging Face cache ({found})", why, _defaults(config))


def training_defaults() -> dict[str, Any]:
    """TrainingArguments' defaults of the keys the estimate reads (the installed table, else the shipped one)."""
    from tuitrain.profile.training_args import snapshot_table, training_args_fields

    fields = training_args_fields()
    if fields is not None:
        return {key: fields[key].default for key in TRAINING_KEYS if key in fields}
    table = (snapshot_table() or {}).get("fields") or {}
    return {key: table[key].get("default") for key in TRAINING_KEYS if isinstance(table.get(key), dict)}


def deepspeed_config(settings: Settings, path: Path | None) -> dict[str, Any] | None:
    """distributed.deepspeed.config_file's JSON (None: none, or unreadable: validation says why)."""
    if path is None or settings["distributed"]["strategy"] != "deepspeed":
        return None
    return read_deepspeed_json(path)[0]


def profile_model(settings: Settings, found: ModelConfig, processes: int, machines: int,
                  deepspeed_json: Mapping[str, Any] | None = None) -> tuple[ModelShape | Unknown, MemorySetup]:
    """The model's shape and the estimate's setup for a profile with defaults and its model's config."""
    model = settings["model"]
    tokenizer = model.get("train_tokenizer")
    vocab = int(tokenizer.get("vocab_size") or 0) if isinstance(tokenizer, dict) and not model.get("name_or_path") else 0
    labels = model.get("labels")
    num_labels = len(labels) if isinstance(labels, list) and labels else int(model.get("num_labels") or 2)
    shape: ModelShape | Unknown = (
        model_shape(found.config, model["task"], num_labels, vocab, found.defaults) if found.config is not None
        else Unknown(found.why or "no config"))
    setup = memory_setup(settings, found.config or {}, processes, machines, training_defaults(), deepspeed_json)
    return shape, setup
