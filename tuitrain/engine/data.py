"""Data: a generated set, local files or a Hub dataset, tokenized for the profile's task."""

from __future__ import annotations

from itertools import chain
from pathlib import Path
from typing import Any

from tuitrain.engine.generated import GENERATORS

_FILE_BUILDERS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


def raw_splits(data: dict[str, Any], seed: int, base_dir: Path) -> tuple[Any, Any | None]:
    """Return (train, validation) `datasets.Dataset`s before tokenization."""
    import datasets

    if data.get("generate"):
        make = GENERATORS[data["generate"]]
        train = datasets.Dataset.from_dict(make(data["num_train"], seed))
        validation = datasets.Dataset.from_dict(make(data["num_validation"], seed + 1))
        return train, validation
    if data.get("train_file"):
        files = {"train": str(_resolve(data["train_file"], base_dir))}
        if data.get("validation_file"):
            files["validation"] = str(_resolve(data["validation_file"], base_dir))
        builder = _FILE_BUILDERS[Path(files["train"]).suffix.lower()]
        loaded = datasets.load_dataset(builder, data_files=files)
        return loaded["train"], loaded.get("validation")
    loaded = datasets.load_dataset(data["dataset"], data.get("dataset_config") or None)
    validation = loaded[data["validation_split"]] if data["validation_split"] in loaded else None
    return loaded[data["train_split"]], validation


class DataError(Exception):
    """A profile's data settings that do not fit the data actually loaded."""


def check_columns(dataset: Any, data: dict[str, Any], task: str, split: str) -> None:
    import difflib

    wanted = {"text_column": data["text_column"]}
    if task == "sequence-classification":
        wanted["label_column"] = data["label_column"]
        if data.get("text_pair_column"):
            wanted["text_pair_column"] = data["text_pair_column"]
    have = list(dataset.column_names)
    for key, column in wanted.items():
        if column not in have:
            near = difflib.get_close_matches(column, have, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise DataError(f"data.{key} = {column!r}: the {split} data has no such column (it has: {', '.join(have)}){hint}")


def _resolve(path: str, base_dir: Path) -> Path:
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else base_dir / candidate


def tokenize_for_classification(dataset: Any, tokenizer: Any, data: dict[str, Any]) -> Any:
    text, pair, label = data["text_column"], data.get("text_pair_column"), data["label_column"]
    max_length = data["max_length"]

    def encode(batch: dict[str, list]) -> dict[str, list]:
        args = (batch[text], batch[pair]) if pair else (batch[text],)
        encoded = tokenizer(*args, truncation=True, max_length=max_length)
        encoded["labels"] = batch[label]
        return encoded

    return dataset.map(encode, batched=True, remove_columns=dataset.column_names)


def tokenize_for_causal_lm(dataset: Any, tokenizer: Any, data: dict[str, Any]) -> Any:
    """Tokenize plain text and regroup it into blocks of block_size tokens (as run_clm.py does)."""
    text, block = data["text_column"], data["block_size"]
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []

    def encode(batch: dict[str, list]) -> dict[str, list]:
        return {"input_ids": [ids + eos for ids in tokenizer(batch[text])["input_ids"]]}

    def group(batch: dict[str, list]) -> dict[str, list]:
        ids = list(chain.from_iterable(batch["input_ids"]))
        usable = (len(ids) // block) * block
        blocks = [ids[i : i + block] for i in range(0, usable, block)]
        return {"input_ids": blocks, "attention_mask": [[1] * block for _ in blocks], "labels": [b[:] for b in blocks]}

    encoded = dataset.map(encode, batched=True, remove_columns=dataset.column_names)
    return encoded.map(group, batched=True)
