"""What a local data file holds, read with the standard library: enough to refuse before a launch
a file the Trainer cannot learn from (empty, no rows, a column missing, labels that are not class
ids). Parquet needs a reader tuitrain does not import here: its rows are checked in the rank.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

SCAN_BYTES = 32 * 2**20  # larger files are checked on their first 32 MiB (the rank checks them whole)
_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")


@dataclass
class Scan:
    """A data file's columns and rows as far as read; `unreadable` says why nothing could be read."""

    columns: list[str] = field(default_factory=list)
    rows: int = 0
    truncated: bool = False
    unreadable: str | None = None
    empty: bool = False
    bad_labels: list[tuple[int, Any]] = field(default_factory=list)  # (row, value): not a class id
    label_min: int | None = None
    label_max: int | None = None
    label_max_row: int | None = None


def _head(path: Path) -> tuple[bytes, bool]:
    with open(path, "rb") as handle:
        data = handle.read(SCAN_BYTES + 1)
    return data[:SCAN_BYTES], len(data) > SCAN_BYTES


def _csv_rows(text: str, truncated: bool) -> tuple[list[str], Iterator[dict[str, Any]]]:
    lines = text.splitlines(keepends=True)
    if truncated and lines:
        lines = lines[:-1]  # the last line may be cut in two
    reader = csv.DictReader(io.StringIO("".join(lines)))
    return list(reader.fieldnames or []), reader


def _json_records(text: str, suffix: str) -> tuple[list[str], list[dict[str, Any]]] | None:
    """Records of a JSON array / JSON Lines file, or None for a shape read otherwise (a dict of
    lists, a "data" field...): the rank reads those."""
    if suffix == ".json":
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, list):
            records = [r for r in whole if isinstance(r, dict)]
            return (list(records[0]) if records else []), records
        if whole is not None:
            return None
    records = []
    for line in text.splitlines():
        if line.strip():
            try:
                item = json.loads(line)
            except ValueError:
                return None
            if not isinstance(item, dict):
                return None
            records.append(item)
    columns: dict[str, None] = {}
    for record in records[:100]:
        columns.update(dict.fromkeys(record))
    return list(columns), records


def _label(value: Any, from_text: bool) -> int | None:
    if from_text:
        return int(value) if isinstance(value, str) and _INT_TEXT.fullmatch(value) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _scan_labels(scan: Scan, rows: Iterator[dict[str, Any]] | list[dict[str, Any]], label: str | None,
                 from_text: bool) -> None:
    for number, row in enumerate(rows, start=1):
        scan.rows = number
        if label is None or label not in row:
            continue
        value = _label(row[label], from_text)
        if value is None:
            if len(scan.bad_labels) < 3:
                scan.bad_labels.append((number, row[label]))
            continue
        scan.label_min = value if scan.label_min is None else min(scan.label_min, value)
        if scan.label_max is None or value > scan.label_max:
            scan.label_max, scan.label_max_row = value, number


def scan_data_file(path: Path, label: str | None) -> Scan | None:
    """Read a CSV / JSON / JSON Lines data file's columns, count its rows and check `label` holds
    whole numbers. None for a format or shape not read here (parquet, a dict-shaped JSON)."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json", ".jsonl"):
        return None
    try:
        raw, truncated = _head(path)
    except OSError as exc:
        return Scan(unreadable=f"cannot read it: {exc.strerror or exc}")
    if not raw.strip():
        return Scan(empty=True)
    try:
        text = raw.decode("utf-8-sig", errors="strict" if not truncated else "ignore")
    except UnicodeDecodeError:
        return Scan(unreadable="not UTF-8 text")
    scan = Scan(truncated=truncated)
    if suffix == ".csv":
        try:
            scan.columns, rows = _csv_rows(text, truncated)
            _scan_labels(scan, rows, label, from_text=True)
        except csv.Error as exc:
            return Scan(unreadable=f"not a CSV file this reader understands: {exc}")
        return scan
    if suffix == ".json" and truncated:
        return None  # a JSON document cannot be read in part
    found = _json_records(text, suffix)
    if found is None:
        return None
    scan.columns, records = found
    _scan_labels(scan, records, label, from_text=False)
    return scan
