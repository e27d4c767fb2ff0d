"""What a local data file holds, read with the standard library: enough to refuse before a launch
a file the Trainer cannot learn from (empty, no rows, a column missing, labels that are not class
ids, a JSON Lines line that is no object, a CSV not separated by commas). Parquet needs a reader
tuitrain does not import here: its rows are checked in the rank. The rank words what it finds
here the same way (`bad_json_line`, `not_commas`).
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
    fix: str | None = None  # for `unreadable`: what would make the file readable
    delimiter: str | None = None  # a CSV whose header reads as one column split by this, not by commas


def _head(path: Path) -> tuple[bytes, bool]:
    with open(path, "rb") as handle:
        data = handle.read(SCAN_BYTES + 1)
    return data[:SCAN_BYTES], len(data) > SCAN_BYTES


CSV_FIELDS_FIX = 'quote a field that holds a comma ("good, really",1), or remove the extra field'


def _csv_rows(text: str, truncated: bool) -> tuple[list[str], Iterator[dict[str, Any]]]:
    lines = text.splitlines(keepends=True)
    if truncated and lines:
        lines = lines[:-1]  # the last line may be cut in two
    reader = csv.DictReader(io.StringIO("".join(lines)))
    return list(reader.fieldnames or []), _whole_rows(reader)


def _whole_rows(reader: csv.DictReader) -> Iterator[dict[str, Any]]:
    """The rows; a row with more fields than the header (the reader files them under None, the engine's CSV
    reader refuses the file) is a BadLine naming the file's line."""
    for row in reader:
        if None in row:
            fields = len(reader.fieldnames or []) + len(row[None])
            raise BadLine(f"line {reader.line_num} has {fields} fields, the header {len(reader.fieldnames or [])}",
                          CSV_FIELDS_FIX)
        yield row


OTHER_DELIMITERS = ";\t|"


def sniff_delimiter(header: list[str], text: str) -> str | None:
    """The delimiter of a CSV whose header read with commas is one column but is split by another
    character (";", a tab, "|"), or None. The engine reads CSV files with commas only."""
    if len(header) != 1 or not any(c in header[0] for c in OTHER_DELIMITERS):
        return None
    sample = "\n".join(text.split("\n", 20)[:20])
    try:
        found = csv.Sniffer().sniff(sample, delimiters="," + OTHER_DELIMITERS).delimiter
    except csv.Error:
        return None
    return found if found in OTHER_DELIMITERS else None


def not_commas(path: Path, delimiter: str, header: str) -> tuple[str, str]:
    """(what is wrong, the fix) for a CSV separated by `delimiter`: validation and the rank say the same."""
    name = {"\t": "tabs", ";": "semicolons (;)", "|": "bars (|)"}.get(delimiter, repr(delimiter))
    what = f"{path} is separated by {name}, not commas (its header reads {json.dumps(header, ensure_ascii=False)})"
    fix = ("tuitrain reads comma-separated CSV files: save it with commas (e.g. pandas: "
           f"pd.read_csv(path, sep={delimiter!r}).to_csv(path, index=False))")
    return what, fix


def _json_reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg}, column {exc.colno}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _what(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


class BadLine(ValueError):
    """A JSON Lines file's line that holds no JSON object (or a JSON document that breaks); str() names the
    line as an editor numbers it, `fix` says what to do."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """The records of JSON Lines text, one a line (blank lines skipped); BadLine at the first line
    that is no JSON object, numbered from 1 as an editor shows it."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise BadLine(f"line {number} is not JSON ({_json_reason(exc)})", JSON_LINES_FIX) from None
        if not isinstance(item, dict):
            raise BadLine(f"line {number} holds {_what(item)}, not a JSON object", JSON_LINES_FIX)
        yield item


JSON_LINES_FIX = "fix that line: each line of a JSON Lines file is one JSON object, e.g. {\"text\": \"...\", \"label\": 0}"


def bad_json_line(path: Path) -> BadLine | None:
    """Why a JSON Lines file (.jsonl, or a .json that is not one JSON document) cannot be read, naming its
    first bad line as an editor numbers it (str(): "line 18 is not JSON (...)", `.fix`); None when every
    line is a JSON object, or the file is one JSON document. Reads the whole file: the rank asks it
    when the loader failed (validation reads the first 32 MiB, `scan_data_file`)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        if path.suffix.lower() == ".json" and _document(text) is not None:
            return None
        for _ in json_lines(text):
            pass
    except BadLine as exc:
        return exc
    return None


def _document(text: str) -> Any:
    """A .json file's whole document; None when it is JSON Lines (its first line is an object of its own);
    BadLine naming where the document breaks otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        first = next((line for line in text.split("\n") if line.strip()), "")
        try:
            lines = isinstance(json.loads(first), dict)
        except ValueError:
            lines = False
        if lines:
            return None
        raise BadLine(f"is not JSON ({exc.msg}, line {exc.lineno} column {exc.colno})",
                      "fix the file there: a .json file holds one JSON document (or one JSON object a line)") from None


def _json_records(text: str, suffix: str) -> tuple[list[str], list[dict[str, Any]]] | None:
    """Records of a JSON array / JSON Lines file, or None for a shape read otherwise (a dict of
    lists, a "data" field...): the rank reads those. BadLine for a JSON Lines line that is no object."""
    if suffix == ".json":
        whole = _document(text)
        if isinstance(whole, list):
            records = [r for r in whole if isinstance(r, dict)]
            return (list(records[0]) if records else []), records
        if whole is not None:
            return None
    records = list(json_lines(text))
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
            scan.delimiter = sniff_delimiter(scan.columns, text)
            _scan_labels(scan, rows, label, from_text=True)
        except csv.Error as exc:
            return Scan(unreadable=f"not a CSV file this reader understands: {exc}")
        except BadLine as exc:
            return Scan(unreadable=str(exc), fix=exc.fix)
        return scan
    if suffix == ".json" and truncated:
        return None  # a JSON document cannot be read in part
    if truncated:
        text = text[: text.rfind("\n") + 1]  # the last line may be cut in two
    try:
        found = _json_records(text, suffix)
    except BadLine as exc:
        return Scan(unreadable=str(exc), fix=exc.fix)
    if found is None:
        return None
    scan.columns, records = found
    _scan_labels(scan, records, label, from_text=False)
    return scan
