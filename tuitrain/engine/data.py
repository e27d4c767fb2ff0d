"""Data: a generated set, local files or a Hub dataset, tokenized for the profile's task."""

from __future__ import annotations

from itertools import chain
from pathlib import Path
from typing import Any, Literal

from tuitrain.engine.errors import DataError, first_line, offline
from tuitrain.profile.datafiles import bad_json_line, not_commas, sniff_delimiter
from tuitrain.profile.generated import GENERATORS
from tuitrain.profile.settings import DataSettings, ModelSettings

_FILE_BUILDERS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


def raw_splits(data: DataSettings, seed: int, base_dir: Path) -> tuple[Any, Any | None]:
    """Return (train, validation) `datasets.Dataset`s before tokenization."""
    import datasets

    if generate := data.get("generate"):
        make = GENERATORS[generate]
        train = datasets.Dataset.from_dict(make(data["num_train"], seed))
        validation = datasets.Dataset.from_dict(make(data["num_validation"], seed + 1))
        return train, validation
    if train_file := data.get("train_file"):
        train = _load_file(train_file, "train_file", base_dir)
        validation_file = data.get("validation_file")
        validation = _load_file(validation_file, "validation_file", base_dir) if validation_file else None
        return train, validation
    loaded = _load_hub(str(data["dataset"]), data.get("dataset_config") or None)  # a source is required (rules.data)
    if data["train_split"] not in loaded:
        raise DataError(f"data.train_split = {data['train_split']!r}: data set {data['dataset']!r} has no such split "
                        f"(it has: {', '.join(loaded)}); set data.train_split to one of them")
    validation = loaded[data["validation_split"]] if data["validation_split"] in loaded else None
    return loaded[data["train_split"]], validation


def _load_file(raw: str, leaf: str, base_dir: Path) -> Any:
    """One local data file as a Dataset; a file that cannot be read, or holds no rows, is one line
    naming data.<leaf>."""
    import datasets

    path = _resolve(raw, base_dir)
    builder = _FILE_BUILDERS[path.suffix.lower()]
    try:
        loaded = datasets.load_dataset(builder, data_files={"train": str(path)})["train"]
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as exc:
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        if "corresponds to no data" in str(exc) or (path.is_file() and not path.read_bytes().strip()):
            raise DataError(f"data.{leaf} = {raw!r}: {path} has no rows; give a file with a header line and "
                            "at least one row") from exc
        bad = bad_json_line(path) if builder == "json" else None
        if bad is not None:  # the loader counts rows from 0 ("row 17"): name the line as an editor does
            raise DataError(f"data.{leaf} = {raw!r}: {path}: {bad}; {bad.fix}") from exc
        raise DataError(f"data.{leaf} = {raw!r}: {path} cannot be read as {builder} ({first_line(cause)}); "
                        f"fix the file, or give a {builder} file") from exc
    if len(loaded) == 0:
        raise DataError(f"data.{leaf} = {raw!r}: {path} has no rows; give a file with at least one row")
    return loaded


def _load_hub(name: str, config: str | None) -> Any:
    import datasets

    try:
        return datasets.load_dataset(name, config)
    except ConnectionError as exc:
        why = ("not in the Hugging Face cache while offline (HF_HUB_OFFLINE=1); download it once online, or give "
               "local files in data.train_file") if offline() else f"cannot be reached ({first_line(exc)})"
        raise DataError(f"data.dataset = {name!r}: {why}") from exc
    except (FileNotFoundError, ValueError, datasets.exceptions.DatasetsError) as exc:
        raise DataError(f"data.dataset = {name!r} (config {config!r}): cannot be loaded ({first_line(exc)}); "
                        "check data.dataset and data.dataset_config") from exc


def check_splits(train: Any, validation: Any | None, data: DataSettings, model: ModelSettings,
                 eval_strategy: str) -> None:
    """Columns and class ids of each split, and validation data when the Trainer evaluates."""
    check_columns(train, data, model["task"], "training")
    if validation is not None:
        check_columns(validation, data, model["task"], "validation")
    elif eval_strategy != "no":
        where = "data.validation_file" if data.get("train_file") else f"data.validation_split ({data['validation_split']!r})"
        raise DataError(f"training.eval_strategy = {eval_strategy!r}: there is no validation data ({where} gives "
                        "none); give validation data, or set training.eval_strategy = \"no\"")
    if model["task"] == "sequence-classification":
        for split, dataset in (("training", train), ("validation", validation)):
            if dataset is not None:
                check_labels(dataset, data["label_column"], model["num_labels"], split)


def check_labels(dataset: Any, column: str, num_labels: int, split: str) -> None:
    """A classifier's labels are class ids 0 .. num_labels - 1 (strings or floats train a wrong
    loss or fail deep inside the Trainer)."""
    feature = dataset.features[column]
    dtype = getattr(feature, "dtype", None)
    if type(feature).__name__ != "ClassLabel" and not (isinstance(dtype, str) and dtype.startswith(("int", "uint"))):
        sample = ", ".join(repr(v) for v in dataset[column][:3])
        raise DataError(f"data.label_column = {column!r}: the {split} labels are {dtype or type(feature).__name__} "
                        f"({sample}, …), not class ids; write each label as its class number 0 to {num_labels - 1}")
    values = dataset.unique(column)
    if not values:
        return
    low, high = min(values), max(values)
    if low < 0:
        raise DataError(f"data.label_column = {column!r}: the {split} data has label {low}; class ids start at 0")
    if high >= num_labels:
        raise DataError(f"model.num_labels = {num_labels}: the {split} data has label {high}; "
                        f"set model.num_labels = {high + 1}")


def check_columns(dataset: Any, data: DataSettings, task: str, split: str) -> None:
    import difflib

    wanted = {"text_column": data["text_column"]}
    if task in ("sequence-classification", "token-classification"):
        wanted["label_column"] = data["label_column"]
    if task == "seq2seq":
        wanted["target_column"] = data["target_column"]
    if task == "sequence-classification" and (pair := data.get("text_pair_column")):
        wanted["text_pair_column"] = pair
    have = list(dataset.column_names)
    for key, column in wanted.items():
        sep = sniff_delimiter(have, have[0]) if column not in have and data.get("train_file") else None
        if sep is not None:  # validation says it first; a file changed since is said here the same way
            leaf: Literal["validation_file", "train_file"] = "validation_file" if split == "validation" else "train_file"
            given = str(data[leaf])
            what, fix = not_commas(Path(given), sep, have[0])
            raise DataError(f"data.{leaf} = {given!r}: {what}; {fix}")
        if column not in have:
            near = difflib.get_close_matches(column, have, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise DataError(f"data.{key} = {column!r}: the {split} data has no such column (it has: {', '.join(have)}){hint}")


def _resolve(path: str, base_dir: Path) -> Path:
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else base_dir / candidate


def tokenize_for_classification(dataset: Any, tokenizer: Any, data: DataSettings) -> Any:
    text, pair, label = data["text_column"], data.get("text_pair_column"), data["label_column"]
    max_length = data["max_length"]

    def encode(batch: dict[str, list]) -> dict[str, list]:
        args = (batch[text], batch[pair]) if pair else (batch[text],)
        encoded = tokenizer(*args, truncation=True, max_length=max_length)
        encoded["labels"] = batch[label]
        return encoded

    return dataset.map(encode, batched=True, remove_columns=dataset.column_names)


def tokenize_for_causal_lm(dataset: Any, tokenizer: Any, data: DataSettings) -> Any:
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


def training_texts(dataset: Any, data: DataSettings, task: str) -> list[str]:
    """The text a tokenizer trained on the fly learns from: the words of a tagged sentence joined,
    both sides of a seq2seq pair."""
    if task == "token-classification":
        return [" ".join(words_of(v)) for v in dataset[data["text_column"]]]
    if task == "seq2seq":
        return list(dataset[data["text_column"]]) + list(dataset[data["target_column"]])
    return list(dataset[data["text_column"]])


def words_of(value: Any) -> list[str]:
    """A row's words (or tags): a list as is, a string (a CSV cell) split on white space."""
    if isinstance(value, str):
        return value.split()
    return list(value)


def tag_names(splits: list[Any], data: DataSettings, given: list[str] | None, generated: list[str] | None) -> list[str]:
    """The tag names in class id order: model.labels, a generated set's, a ClassLabel feature's
    (Hub data sets), else the tags found in the data, "O" first then sorted."""
    if given:
        return list(given)
    if generated:
        return list(generated)
    column = data["label_column"]
    inner: Any = getattr(splits[0].features[column], "feature", None)
    if type(inner).__name__ == "ClassLabel":
        return list(inner.names)
    found: set[Any] = set()
    for dataset in splits:
        for row in dataset[column]:
            found.update(words_of(row))
    if any(isinstance(tag, int) for tag in found):
        raise DataError(f"data.label_column = {column!r}: the tags are class ids, and nothing names them; "
                        "set model.labels = [\"O\", \"B-...\", ...] (the name of each id, in order)")
    return (["O"] if "O" in found else []) + sorted(found - {"O"})


def tag_ids(dataset: Any, data: DataSettings, labels: list[str], split: str) -> list[list[int]]:
    """Each row's tags as class ids, one per word; a tag not among the labels, or a row whose
    tags and words differ in number, is one line naming the row."""
    ids = {name: i for i, name in enumerate(labels)}
    out: list[list[int]] = []
    for row, (words, tags) in enumerate(zip(dataset[data["text_column"]], dataset[data["label_column"]], strict=True)):
        words, tags = words_of(words), words_of(tags)
        if len(words) != len(tags):
            raise DataError(f"data.label_column = {data['label_column']!r}: {split} row {row} has {len(words)} words "
                            f"and {len(tags)} tags; give one tag per word")
        row_ids = []
        for tag in tags:
            if isinstance(tag, int):
                if not 0 <= tag < len(labels):
                    raise DataError(f"model.labels: {split} row {row} has tag id {tag}, but {len(labels)} labels are "
                                    f"named; name every id in model.labels")
                row_ids.append(tag)
            elif tag in ids:
                row_ids.append(ids[tag])
            else:
                raise DataError(f"model.labels: {split} row {row} has tag {tag!r}, which is not among the labels "
                                f"({', '.join(labels)}); add it to model.labels")
        out.append(row_ids)
    return out


def tokenize_for_token_classification(dataset: Any, tokenizer: Any, data: DataSettings, labels: list[str],
                                      split: str) -> Any:
    """Words to sub-tokens; each word's tag on its first sub-token, -100 (ignored by the loss and
    the metrics) on the others and on special tokens."""
    ids = tag_ids(dataset, data, labels, split)
    words = [words_of(v) for v in dataset[data["text_column"]]]
    encoded = tokenizer(words, is_split_into_words=True, truncation=True, max_length=data["max_length"])
    aligned = []
    for i, row_ids in enumerate(ids):
        previous = None
        row = []
        for word in encoded.word_ids(i):
            row.append(-100 if word is None or word == previous else row_ids[word])
            previous = word
        aligned.append(row)
    import datasets

    return datasets.Dataset.from_dict({**{k: encoded[k] for k in encoded.keys()}, "labels": aligned})


def tokenize_for_seq2seq(dataset: Any, tokenizer: Any, data: DataSettings) -> Any:
    source, target = data["text_column"], data["target_column"]

    def encode(batch: dict[str, list]) -> dict[str, list]:
        encoded = tokenizer(batch[source], truncation=True, max_length=data["max_length"])
        encoded["labels"] = tokenizer(text_target=batch[target], truncation=True, max_length=data["max_target_length"])["input_ids"]
        return encoded

    return dataset.map(encode, batched=True, remove_columns=dataset.column_names)
