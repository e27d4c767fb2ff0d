"""The installed transformers' TrainingArguments fields (and model types), known without importing
transformers here.

`python -m tuitrain.engine.training_args_probe` imports transformers in a child interpreter and
prints a JSON table; the table is cached per transformers install (its version and folder) under
``$XDG_CACHE_HOME/tuitrain/`` (default ``~/.cache/tuitrain/``) and in-process. Reading it takes
seconds, once per install: it is announced to the reporter the CLI or the app sets
(`report_reading_to`), and a failure is kept, in one line, for the profile's problems
(`training_args_failure`) instead of silently meaning "no table".

Also here: the data-driven table of renamed / retired [training] keys (`MIGRATIONS`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from tuitrain.atomic import write_text_atomic
from tuitrain.installed import distribution_version

PROBE_MODULE = "tuitrain.engine.training_args_probe"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent  # the folder that holds tuitrain/


class TrainingArgsProbeError(Exception):
    """The child interpreter could not give the TrainingArguments table; the message says why, in one line."""


@dataclass(frozen=True)
class FieldSpec:
    """One TrainingArguments field in simple form.

    `type` is "bool" | "int" | "float" | "str" | "list" | "dict" | "any", prefixed "optional-" when
    None is allowed; a union of several kinds (e.g. ``str | list[str]``) has type "any" and lists
    them in `accepts`. `choices` holds enum / literal values (for lists: allowed elements).
    """

    name: str
    type: str
    default: Any = None
    choices: tuple[Any, ...] | None = None
    accepts: tuple[str, ...] = ()
    help: str = ""

    @property
    def base_type(self) -> str:
        return self.type.removeprefix("optional-")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tuitrain"


def transformers_version() -> str | None:
    return distribution_version("transformers")


def transformers_location() -> str | None:
    """The folder `import transformers` would load from (found without importing it)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("transformers")
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    return str(Path(origin).resolve().parent) if origin else None


def cache_path(version: str, location: str | None = None) -> Path:
    """The cached table of one transformers install: its version and a digest of its folder (two
    environments with the same version, e.g. one patched, keep a table each)."""
    digest = hashlib.sha256((location or "").encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return cache_dir() / f"training-args-{version}-{digest}.json"


# Who hears about the one-off read (the CLI prints to stderr, the app shows a note); None: nobody.
_reporter: Callable[[str], None] | None = None
_failure: str | None = None


def report_reading_to(reporter: Callable[[str], None] | None) -> None:
    """Announce each read of the table (seconds, once per transformers install) to `reporter`."""
    global _reporter
    _reporter = reporter


def _report(line: str) -> None:
    if _reporter is not None:
        _reporter(line)


def training_args_failure() -> str | None:
    """Why the installed transformers' TrainingArguments could not be read, in one line (None:
    they were, or transformers is not installed)."""
    _cached_table(transformers_version(), transformers_location())
    return _failure


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def introspect_training_args(python: str | None = None, timeout: float = 120.0) -> dict[str, Any]:
    """Run the probe in a child interpreter and return its JSON table; TrainingArgsProbeError (one
    line naming what failed) when it cannot."""
    argv = [python or sys.executable, "-m", PROBE_MODULE]
    shown = f"python -m {PROBE_MODULE}"
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH", ""), str(PACKAGE_ROOT)) if p)
    env = {**os.environ, "PYTHONPATH": path, "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise TrainingArgsProbeError(f"{shown} took more than {timeout:g} s") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise TrainingArgsProbeError(f"{shown} could not start: {exc}") from None
    if done.returncode != 0:
        why = _last_line(done.stderr) or "no message"
        raise TrainingArgsProbeError(f"{shown} failed (exit {done.returncode}): {why}")
    try:
        table = json.loads(_last_line(done.stdout))
    except ValueError:
        table = None
    if not isinstance(table, dict) or not isinstance(table.get("fields"), dict):
        raise TrainingArgsProbeError(f"{shown} printed no table: {_last_line(done.stdout)[:120]!r}")
    return table


def _specs_from_table(table: dict[str, Any]) -> dict[str, FieldSpec]:
    specs: dict[str, FieldSpec] = {}
    for name, raw in table["fields"].items():
        kinds = [k for k in raw.get("kinds") or ["any"] if k]
        accepts: tuple[str, ...]
        if "any" in kinds or not kinds:
            simple, accepts = "any", ()
        elif len(kinds) == 1:
            simple, accepts = kinds[0], (kinds[0],)
        else:
            simple, accepts = "any", tuple(kinds)
        if raw.get("optional") and simple != "any":
            simple = "optional-" + simple
        choices = raw.get("choices")
        specs[name] = FieldSpec(
            name=name,
            type=simple,
            default=raw.get("default"),
            choices=tuple(choices) if choices else None,
            accepts=accepts,
            help=raw.get("help") or "",
        )
    return specs


@functools.cache
def _cached_table(version: str | None, location: str | None) -> dict[str, Any] | None:
    global _failure
    if version is None:
        return None
    path = cache_path(version, location)
    table: dict[str, Any] | None = None
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(table, dict) or not isinstance(table.get("fields"), dict) or "model_types" not in table:
            table = None
    except (OSError, ValueError):
        table = None
    if table is None:
        _report(f"reading TrainingArguments from transformers {version} (once per install)…")
        try:
            table = introspect_training_args()
        except TrainingArgsProbeError as exc:
            _failure = f"TrainingArguments of transformers {version} could not be read: {exc}"
            return None  # the profile's checks say so (training_args_failure)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, json.dumps(table, indent=1, sort_keys=True))
        except OSError as exc:
            _report(f"could not keep the TrainingArguments table in {path.parent} ({exc.strerror or exc}): "
                    "the next run reads it again")
    return table


@functools.cache
def _cached_fields(version: str | None, location: str | None) -> dict[str, FieldSpec] | None:
    global _failure
    table = _cached_table(version, location)
    if table is None:
        return None
    try:
        return _specs_from_table(table)
    except (KeyError, TypeError, AttributeError) as exc:
        _failure = f"the TrainingArguments table of transformers {version} is not as expected ({exc!r}): " \
                   f"delete {cache_path(version or '', location)} to read it again"
        return None


def installed_model_types() -> frozenset[str] | None:
    """The model_type names the installed transformers knows (its CONFIG_MAPPING); None when unknown."""
    table = _cached_table(transformers_version(), transformers_location())
    names = table.get("model_types") if table else None
    if not isinstance(names, list):
        return None
    return frozenset(n for n in names if isinstance(n, str))


def training_args_fields() -> dict[str, FieldSpec] | None:
    """Name -> FieldSpec for the installed TrainingArguments; None when transformers is missing."""
    fields = _cached_fields(transformers_version(), transformers_location())
    return dict(fields) if fields is not None else None


# ---------------------------------------------------------------------------------------------
# Renamed and retired [training] keys. One table; load.py and validate.py both read it.
#   new: dotted destination ("training.eval_strategy", "model.tokenizer"), or None to drop.
#   only_if_absent: migrate only when the installed TrainingArguments lacks the old key.


@dataclass(frozen=True)
class Migration:
    old: str
    new: str | None
    note: str
    only_if_absent: bool = False


MIGRATIONS: dict[str, Migration] = {
    m.old: m
    for m in (
        Migration("evaluation_strategy", "training.eval_strategy",
                  "renamed to eval_strategy in transformers"),
        Migration("tokenizer", "model.tokenizer",
                  "the tokenizer is not a TrainingArguments key (Trainer takes it as processing_class); "
                  "tuitrain reads it from model.tokenizer"),
        Migration("no_cuda", "training.use_cpu", "renamed to use_cpu in transformers"),
        Migration("push_to_hub_token", "training.hub_token", "renamed to hub_token in transformers"),
        Migration("overwrite_output_dir", None,
                  "not needed: tuitrain never overwrites checkpoints (resume a run instead); dropped"),
        Migration("warmup_ratio", "training.warmup_steps",
                  "this transformers has no warmup_ratio; a float in [0, 1) in warmup_steps is a ratio",
                  only_if_absent=True),
    )
}


def applicable_migration(key: str, fields: Mapping[str, FieldSpec] | None) -> Migration | None:
    """The migration for a [training] key, if it applies with the installed transformers."""
    m = MIGRATIONS.get(key)
    if m is None:
        return None
    if m.only_if_absent and (fields is None or key in fields):
        return None
    return m
