"""[data]: one data source that serves the task, files of a known type that are there, and keys that need
another one. (What the files hold is data_files.py's.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..problems import Problem
from ..schema import DATA_FILE_FORMATS, GENERATOR_TASKS, TASKS
from ..values import toml_literal
from .common import is_dir, is_file, relative_fix, resolve_path, table_of, task_of, value_of, value_or_default


def rules_data(file: str, data: Mapping[str, Any], base_dir: Path | None) -> list[Problem]:
    out: list[Problem] = []
    dat = table_of(data, "data")
    task = task_of(data)
    sources = [k for k in ("generate", "dataset", "train_file") if k in dat]
    if not sources:
        out.append(Problem(file, "data", "no data source",
                           'set one of data.generate = "sentiment-words", data.dataset = "<Hub name>", '
                           'or data.train_file = "train.csv"'))
    generated = value_or_default(dat, "data.generate")
    serves = GENERATOR_TASKS.get(generated or "")
    if serves and task in TASKS and task not in serves:
        fits = [name for name, tasks in GENERATOR_TASKS.items() if task in tasks]
        out.append(Problem(file, "data.generate", f"{toml_literal(generated)} makes data for task "
                           f"{' or '.join(serves)}; model.task is {toml_literal(task)}",
                           f"use data.generate = {toml_literal(fits[0])}" if fits else "give data files"))
    elif len(sources) > 1:
        out.append(Problem(file, "data", "more than one data source: "
                           + ", ".join(f"data.{s}" for s in sources), "keep one"))
    if "dataset_config" in dat and "dataset" not in dat:
        out.append(Problem(file, "data.dataset_config", "given without data.dataset",
                           'set data.dataset = "<Hub name>" or remove dataset_config'))
    if "validation_file" in dat and "train_file" not in dat:
        out.append(Problem(file, "data.validation_file", "given without data.train_file",
                           'set data.train_file = "train.csv" too'))
    formats: dict[str, str] = {}
    for leaf in ("train_file", "validation_file"):
        raw = value_of(dat, leaf, "str")
        if raw is None:
            continue
        path = resolve_path(raw, base_dir)
        fmt = DATA_FILE_FORMATS.get(path.suffix.lower())
        if fmt is not None:
            formats[leaf] = fmt
        elif not is_dir(path):  # a folder: said below
            out.append(Problem(file, f"data.{leaf}", f"unknown file type {path.suffix or '(none)'!r}: {raw}",
                               "use one of " + ", ".join(DATA_FILE_FORMATS)))
        if not is_file(path):
            what = "is a folder, not a file" if is_dir(path) else "no such file"
            out.append(Problem(file, f"data.{leaf}", f"{what}: {path}",
                               relative_fix(base_dir)))
    if len(set(formats.values())) > 1:
        out.append(Problem(file, "data.validation_file",
                           f"is {formats['validation_file']} but data.train_file is {formats['train_file']}",
                           "use the same file type for both"))
    if task == "causal-lm" and "text_pair_column" in dat:
        out.append(Problem(file, "data.text_pair_column", 'ignored for task "causal-lm"', "remove it",
                           severity="warning"))
    return out

