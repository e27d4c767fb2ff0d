"""The contents of local CSV / JSON data files: rows, the columns [data] names, a classifier's class ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..datafiles import Scan, not_commas, scan_data_file
from ..problems import Problem, did_you_mean
from ..schema import data_default
from ..values import describe_value, toml_literal
from .common import is_file, resolve_path, table_of, value_of, value_or_default


def _file_problems(file: str, leaf: str, path: Path, scan: Scan) -> list[Problem]:
    key = f"data.{leaf}"
    if scan.unreadable:
        return [Problem(file, key, f"{path}: {scan.unreadable}", scan.fix or "give a CSV, JSON or JSON Lines file in UTF-8")]
    if scan.empty:
        return [Problem(file, key, f"{path} is empty", "give a file with a header line and at least one row")]
    if scan.rows == 0:
        shown = f"a header ({', '.join(scan.columns)}) but no rows" if scan.columns else "no records"
        return [Problem(file, key, f"{path} has {shown}", "add rows to it (one example per line)")]
    return []


def delimiter_problem(file: str, key: str, path: Path, delimiter: str, header: str) -> Problem:
    """A CSV separated by another character than the comma (the engine reads commas only)."""
    what, fix = not_commas(path, delimiter, header)
    return Problem(file, key, what, fix)


def _column_problems(file: str, path: Path, scan: Scan, wanted: Mapping[str, str]) -> list[Problem]:
    out = []
    for leaf, column in wanted.items():
        if column not in scan.columns:
            hint = did_you_mean(column, scan.columns)
            out.append(Problem(file, f"data.{leaf}", f"{toml_literal(column)} is not a column of {path} "
                               f"(it has: {', '.join(scan.columns) or 'none'})",
                               hint or f"set data.{leaf} to one of its columns"))
    return out


def _label_problems(file: str, path: Path, scan: Scan, column: str, num_labels: int) -> list[Problem]:
    out = []
    if scan.bad_labels:
        shown = ", ".join(f"{toml_literal(v) if isinstance(v, (str, int, float, bool)) else describe_value(v)}"
                          f" (row {row})" for row, v in scan.bad_labels)
        out.append(Problem(file, "data.label_column",
                           f"column {toml_literal(column)} of {path} holds {shown}: a classifier's labels are "
                           f"class ids, whole numbers 0 to model.num_labels - 1 ({num_labels - 1})",
                           "write each label as its class number (e.g. negative = 0, positive = 1) in the file"))
    if scan.label_min is not None and scan.label_min < 0:
        out.append(Problem(file, "data.label_column", f"column {toml_literal(column)} of {path} holds "
                           f"{scan.label_min}: class ids start at 0", "number the classes 0, 1, 2, … in the file"))
    if scan.label_max is not None and scan.label_max >= num_labels:
        out.append(Problem(file, "model.num_labels",
                           f"is {num_labels}, but {path} has label {scan.label_max} (row {scan.label_max_row}); "
                           f"class ids must be 0 to {num_labels - 1}",
                           f"set model.num_labels = {scan.label_max + 1}"))
    return out


def rules_data_files(file: str, data: Mapping[str, Any], base_dir: Path | None) -> list[Problem]:
    """The contents of local CSV / JSON data files: rows, columns, class ids."""
    out: list[Problem] = []
    dat = table_of(data, "data")
    model = table_of(data, "model")
    task = value_or_default(model, "model.task")
    classify = task == "sequence-classification"
    label = value_of(dat, "label_column", "str", data_default(task, "label_column"))
    wanted = {"text_column": value_of(dat, "text_column", "str", data_default(task, "text_column"))}
    if classify or task == "token-classification":
        wanted["label_column"] = label
    if task == "seq2seq":
        wanted["target_column"] = value_of(dat, "target_column", "str", data_default(task, "target_column"))
    if classify:
        pair = value_of(dat, "text_pair_column", "str")
        if pair:
            wanted["text_pair_column"] = pair
    for leaf in ("train_file", "validation_file"):
        raw = value_of(dat, leaf, "str")
        path = resolve_path(raw, base_dir) if raw else None
        if path is None or not is_file(path):
            continue
        scan = scan_data_file(path, label if classify else None)
        if scan is None:
            continue
        found = _file_problems(file, leaf, path, scan)
        if not found and scan.delimiter and any(c not in scan.columns for c in wanted.values()):
            found = [delimiter_problem(file, f"data.{leaf}", path, scan.delimiter, scan.columns[0])]
        found = found or _column_problems(file, path, scan, wanted)
        if not found and classify:
            found = _label_problems(file, path, scan, label, value_or_default(model, "model.num_labels"))
        out.extend(found)
    return out

