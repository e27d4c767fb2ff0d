"""[metrics]: names that fit the task, and the packages their evaluate modules wrap."""

from __future__ import annotations

from typing import Any, Mapping

from tuitrain.installed import distribution_version

from ..problems import Problem
from ..schema import DEFAULT_METRICS, METRIC_PACKAGES, METRIC_TASKS, TASKS
from ..values import toml_literal
from .common import table_of, task_of, value_of


def rules_metrics(file: str, data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    task = task_of(data)
    given = value_of(table_of(data, "metrics"), "names", "list")
    names = given if given is not None else DEFAULT_METRICS.get(task, [])
    for i, name in enumerate(names):
        key = f"metrics.names[{i}]" if given is not None else "metrics.names"
        if not isinstance(name, str) or name not in METRIC_TASKS:
            continue
        if task == "sequence-classification" and name == "perplexity":
            out.append(Problem(file, key, 'perplexity is a metric for task "causal-lm"',
                               "remove it", severity="warning"))
        elif task == "causal-lm" and name not in ("perplexity", "accuracy"):
            out.append(Problem(file, key, f'{name} is a classification metric; task is "causal-lm"',
                               'use names = ["perplexity"]', severity="warning"))
        elif task in TASKS and task not in METRIC_TASKS[name]:
            fits = [n for n, tasks in METRIC_TASKS.items() if task in tasks]
            out.append(Problem(file, key, f"{name} is a metric for task {' or '.join(METRIC_TASKS[name])}; "
                               f"task is {toml_literal(task)}", f"use names from {', '.join(fits)}", severity="warning"))
        elif task in METRIC_TASKS[name]:
            for module, pip_name in METRIC_PACKAGES.get(name, ()):
                if distribution_version(pip_name) is None:
                    default = "" if given is not None else f" (the default for task {toml_literal(task)})"
                    out.append(Problem(file, key, f"{name}{default} is computed by the {pip_name} package "
                                       f"({module}), which is not installed here",
                                       "pip install 'tuitrain[tasks]'"))
    return out

