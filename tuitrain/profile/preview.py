"""A look at a profile's training data before a launch, without the ML stack: the first rows as
the engine tokenizes them (tokens as text pieces), the label balance, and the token lengths with
a suggested `data.max_length`.

Local CSV / JSON / JSON Lines files are read with the standard library and a pretrained
tokenizer folder's tokenizer.json with the `tokenizers` library (what transformers' fast
tokenizers run on); the built-in generated sets come from the same pure-Python generators (profile/generated.py).
What only the ML stack can read (Hub data sets, Parquet, a tokenizer trained at launch, a Hub
tokenizer) is said in one line each, and the rest is shown.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .schema import Profile, settings_with_defaults
from .settings import DataSettings, ModelSettings, Settings
from .values import whole_number


@dataclass
class PreviewRow:
    text: Any
    pair: Any = None
    label: Any = None
    tokens: list[str] | None = None  # as the engine would feed them (truncated to max_length)


@dataclass
class Preview:
    source: str
    rows: list[PreviewRow] = field(default_factory=list)
    total: int = 0
    labels: list[tuple[Any, int]] = field(default_factory=list)  # (label, count), by label
    lengths: list[int] = field(default_factory=list)  # tokens per row before truncation
    max_length: int | None = None
    notes: list[str] = field(default_factory=list)  # what could not be shown, one line each


def read_records(path: Path) -> list[dict[str, Any]]:
    """A CSV, JSON array or JSON Lines file's rows as dicts (ValueError: the one line why not)."""
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix == ".csv":
        return list(csv.DictReader(text.splitlines()))
    if suffix == ".json":
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, list):
            return [r for r in whole if isinstance(r, dict)]
        if isinstance(whole, dict) and whole and all(isinstance(v, list) for v in whole.values()):
            columns = list(whole)
            return [dict(zip(columns, values, strict=False)) for values in zip(*whole.values(), strict=False)]
        if whole is not None:
            raise ValueError(f"{path}: a JSON shape the preview does not read (the engine may); give records or lines")
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path} line {number}: not JSON ({exc})") from None
            if isinstance(item, dict):
                records.append(item)
    return records


def _class_id(value: Any) -> Any:
    """CSV cells are text: "1" counts as class 1, as the engine reads the column."""
    number = whole_number(value) if isinstance(value, str) else None
    return value if number is None else number


def _resolve(raw: str, base_dir: Path) -> Path:
    path = Path(raw).expanduser()
    return path if path.is_absolute() else base_dir / path


def load_rows(settings: Settings, base_dir: Path) -> tuple[str, list[dict[str, Any]] | None, str | None]:
    """(what the data is, its training rows, why they cannot be read here)."""
    data = settings["data"]
    if name := data.get("generate"):
        from tuitrain.profile.generated import GENERATORS  # pure Python: the rows the engine trains on

        columns = GENERATORS[name](data["num_train"], settings["run"]["seed"])
        rows = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
        return f"data.generate = {name!r} ({len(rows)} generated rows)", rows, None
    if train_file := data.get("train_file"):
        path = _resolve(train_file, base_dir)
        shown = f"data.train_file = {train_file!r}"
        if path.suffix.lower() == ".parquet":
            return shown, None, f"{shown}: Parquet needs a reader the preview does not load; the rank reads it"
        try:
            rows = read_records(path)
        except OSError as exc:
            return shown, None, f"{shown}: cannot be read ({exc.strerror or exc}): {path}"
        except (ValueError, csv.Error) as exc:
            return shown, None, f"{shown}: {exc}"
        return f"{shown} ({len(rows)} rows)", rows, None
    shown = f"data.dataset = {data['dataset']!r}"
    return shown, None, f"{shown}: a Hub data set is read by the rank (datasets); the preview reads local files only"


def load_tokenizer(model: ModelSettings, base_dir: Path) -> tuple[Any, str | None]:
    """A `tokenizers.Tokenizer` from the profile's pretrained tokenizer folder, or why not."""
    source = model.get("tokenizer") or model.get("name_or_path")
    key = "model.tokenizer" if model.get("tokenizer") else "model.name_or_path"
    if not source:
        return None, ("model.train_tokenizer: the tokenizer is trained on the training text at launch; "
                      "token pieces and lengths show once a run has saved it")
    folder = _resolve(source, base_dir)
    if not folder.is_dir():
        folder = Path(source).expanduser()
    file = folder / "tokenizer.json"
    if not file.is_file():
        where = "a Hub id" if not folder.is_dir() else f"{folder} has no tokenizer.json"
        return None, f"{key} = {source!r}: {where}; the preview reads a local folder's tokenizer.json"
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None, "the `tokenizers` package is not installed (pip install tokenizers)"
    try:
        tokenizer = Tokenizer.from_file(str(file))
    except Exception as exc:  # noqa: BLE001 - the library raises plain Exceptions for a bad file
        return None, f"{key} = {source!r}: {file} cannot be read ({str(exc).splitlines()[0]})"
    tokenizer.no_padding()
    return tokenizer, None


def _inputs(row: dict[str, Any], data: DataSettings, task: str) -> tuple[Any, bool]:
    """What the engine hands the tokenizer for one row: (text, is_pretokenized)."""
    text = row.get(data["text_column"])
    if task == "token-classification":
        return (text.split() if isinstance(text, str) else list(text or [])), True
    pair = data.get("text_pair_column") if task == "sequence-classification" else None
    if pair:
        return (str(text or ""), str(row.get(pair) or "")), False
    return str(text or ""), False


def _encode(tokenizer: Any, inputs: list[Any], pretokenized: bool) -> list[Any]:
    return tokenizer.encode_batch(inputs, is_pretokenized=pretokenized) if inputs else []


def preview_profile(profile: Profile, rows: int = 5) -> Preview:
    settings = settings_with_defaults(profile)
    data, model = settings["data"], settings["model"]
    task = model["task"]
    base_dir = Path(profile.path).expanduser().resolve().parent if profile.path else Path.cwd()
    source, records, why = load_rows(settings, base_dir)
    preview = Preview(source=source, max_length=data.get("max_length"))
    if records is None:
        preview.notes.append(why or "no rows")
        return preview
    preview.total = len(records)
    missing = [c for c in (data["text_column"], data.get("text_pair_column") if task == "sequence-classification" else None)
               if c and records and c not in records[0]]
    if missing:
        have = ", ".join(records[0]) if records else "nothing"
        preview.notes.append(f"data.text_column: the training data has no column {missing[0]!r} (it has: {have})")
        return preview
    label_column = data.get("label_column")
    if task == "sequence-classification" and label_column:
        counts = Counter(_class_id(r.get(label_column)) for r in records)
        preview.labels = sorted(counts.items(), key=lambda item: (str(type(item[0])), item[0]))
    pair = data.get("text_pair_column") if task == "sequence-classification" else None
    for record in records[:rows]:
        preview.rows.append(PreviewRow(record.get(data["text_column"]), record.get(pair) if pair else None,
                                       record.get(label_column) if label_column else None))
    tokenizer, why = load_tokenizer(model, base_dir)
    if tokenizer is None:
        preview.notes.append(why or "no tokenizer")
        return preview
    inputs = [_inputs(r, data, task) for r in records]
    pretokenized = task == "token-classification"
    tokenizer.no_truncation()
    preview.lengths = [len(e.ids) for e in _encode(tokenizer, [i for i, _ in inputs], pretokenized)]
    if task == "causal-lm":
        preview.notes.append(f"model.task = 'causal-lm': rows are joined and cut into data.block_size = "
                             f"{data.get('block_size')} blocks; max_length does not apply")
        preview.max_length = None
    elif preview.max_length:
        tokenizer.enable_truncation(int(preview.max_length))
    for row, encoding in zip(preview.rows, _encode(tokenizer, [i for i, _ in inputs[:rows]], pretokenized), strict=True):
        row.tokens = list(encoding.tokens)
    return preview


def percentile(lengths: list[int], q: float) -> int:
    """The nearest-rank percentile: at least q of the lengths are at most this."""
    ordered = sorted(lengths)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def round_up(value: int, multiple: int = 8) -> int:
    return max(multiple, math.ceil(value / multiple) * multiple)


def suggested_max_length(lengths: list[int], q: float = 0.95) -> int:
    """The q-th percentile of the token lengths, rounded up to a multiple of 8."""
    return round_up(percentile(lengths, q))


def histogram(lengths: list[int], bins: int = 10) -> list[tuple[int, int, int]]:
    """(low, high, count) bins of the lengths, each 8 wide or a multiple of 8."""
    if not lengths:
        return []
    top = max(lengths)
    width = round_up(math.ceil((top + 1) / bins))
    counts = Counter(length // width for length in lengths)
    return [(i * width, (i + 1) * width - 1, counts.get(i, 0)) for i in range(top // width + 1)]


def _cell(value: Any, width: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def preview_lines(preview: Preview) -> list[str]:
    """The preview as plain lines (the CLI prints them, the app shows them)."""
    lines = [f"training data: {preview.source}"]
    for i, row in enumerate(preview.rows):
        label = f"  label {row.label}" if row.label is not None else ""
        lines.append(f"row {i}:{label}")
        lines.append(f"  text  {_cell(row.text)}")
        if row.pair is not None:
            lines.append(f"  pair  {_cell(row.pair)}")
        if row.tokens is not None:
            lines.append(f"  {len(row.tokens)} tokens  " + _cell(" ".join(row.tokens), 1000))
    if preview.labels:
        lines.append("labels:")
        total = sum(count for _, count in preview.labels)
        for label, count in preview.labels:
            lines.append(f"  {label!s:>6}  {count:>7}  {count / total:6.1%}")
    if preview.lengths:
        n = len(preview.lengths)
        lines.append(f"token lengths ({n} rows): min {min(preview.lengths)}, median {percentile(preview.lengths, 0.5)}, "
                     f"max {max(preview.lengths)}")
        bins = histogram(preview.lengths)
        most = max(count for _, _, count in bins) or 1
        for low, high, count in bins:
            mark = "  ◀ max_length" if preview.max_length and low <= preview.max_length <= high else ""
            lines.append(f"  {low:>5}-{high:<5} {'█' * math.ceil(30 * count / most):<30} {count}{mark}")
        p95, p99 = suggested_max_length(preview.lengths, 0.95), suggested_max_length(preview.lengths, 0.99)
        covered95 = sum(length <= p95 for length in preview.lengths)
        covered99 = sum(length <= p99 for length in preview.lengths)
        lines.append(f"suggested data.max_length = {p95} (covers {covered95 / n:.1%} of rows; {p99} covers "
                     f"{covered99 / n:.1%})")
        if preview.max_length:
            cut = sum(length > preview.max_length for length in preview.lengths)
            lines.append(f"data.max_length = {preview.max_length} truncates {cut} of {n} rows ({cut / n:.1%})")
    lines += preview.notes
    return lines
