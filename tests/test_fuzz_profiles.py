"""Bad input at scale (issue 10): generated profiles — malformed values and shapes — through
`validate`, `plan` and the editor's check, and malformed text through the loader: every outcome is
a list of problems or a ProfileError, never a traceback.

The editor's check is what tuitrain/tui/screens/editor.py runs on every edit: validate_profile,
then, when that finds no error, plan_profile against the app's hardware (the recorded NVML tables
stand in for the GPUs here, as everywhere in the tests).
"""

from __future__ import annotations

import copy
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from tuitrain.hardware.devices import discover
from tuitrain.hardware.host import ProcessMeter
from tuitrain.hardware.probe import Hardware, hardware_from
from tuitrain.hardware.recorded import RecordedNvml, load_table
from tuitrain.profile import (
    Problem,
    Profile,
    ProfileError,
    apply_overrides,
    builtin_profile_path,
    load_profile,
    parse_override,
    validate_profile,
)
from tuitrain.profile.accelerate_import import import_accelerate_config
from tuitrain.profile.schema import SCHEMA, TableSpec
from tuitrain.profile.shape import check_value
from tuitrain.profile.training_args import training_args_fields
from tuitrain.runs.start.from_profile import plan_profile

# hypothesis keeps caches in ./.hypothesis by default: the tree stays clean
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "tuitrain-hypothesis")

NVML = Path(__file__).parent / "fixtures" / "nvml"
DEMO_TEXT = builtin_profile_path().read_text()
DEMO = tomllib.loads(DEMO_TEXT)
FIELDS = training_args_fields() or {}
# database=None: no .hypothesis folder in the tree; a failure prints the example to reproduce it
FUZZ = settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.function_scoped_fixture])


def _box(name: str) -> Hardware:
    return hardware_from(discover(RecordedNvml(load_table(NVML / f"{name}.json")), ProcessMeter().identify), user="me")


BOXES = {name: _box(name) for name in ("no_driver", "four_gpu_mixed", "mig_a100")}

# ------------------------------------------------------------------ generators

scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([0, 1, -1, 2, 3, 7, 2**31, 65536, 65535]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", " ", "auto", "cpu", "cuda", "mps", "fsdp", "ddp", "deepspeed", "single", "nvme", "bert",
                     "steps", "epoch", "no", "bf16", "fp16", "../x", "/", "~", "\x00", "é", "😀", "train.csv"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)


def _known_keys() -> list[tuple[str, ...]]:
    """Every dotted place a profile has a key: schema keys, sub-table keys, TrainingArguments."""
    paths: list[tuple[str, ...]] = []
    for section, keys in SCHEMA.items():
        for leaf, spec in keys.items():
            paths.append((section, leaf))
            if isinstance(spec, TableSpec):
                paths += [(section, leaf, sub) for sub in spec.keys]
    paths += [("training", name) for name in FIELDS]
    paths += [("model", "config", k) for k in ("model_type", "hidden_size", "num_attention_heads", "n_embd",
                                                "n_head", "vocab_size", "max_position_embeddings")]
    return paths


KEYS = _known_keys()
any_key = st.one_of(st.sampled_from(KEYS),
                    st.lists(st.text(max_size=8), min_size=1, max_size=3).map(tuple))


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node: Any = data
    for part in path[:-1]:
        if not isinstance(node, dict):
            return
        node = node.setdefault(part, {})
    if isinstance(node, dict):
        node[path[-1]] = value


def _drop(data: dict[str, Any], path: tuple[str, ...]) -> None:
    node: Any = data
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(path[-1], None)


edits = st.lists(st.one_of(st.tuples(st.just("set"), any_key, values),
                           st.tuples(st.just("drop"), any_key, st.none())), min_size=1, max_size=6)


def mutated(changes: list[tuple[str, tuple[str, ...], Any]]) -> dict[str, Any]:
    data = copy.deepcopy(DEMO)
    for action, path, value in changes:
        if action == "set":
            _set(data, path, value)
        else:
            _drop(data, path)
    return data


def editor_check(data: dict[str, Any], folder: Path, hardware: Hardware) -> list[Problem]:
    """What the editor runs on each edit (tuitrain/tui/screens/editor.py, ProfileEditor._check)."""
    path = folder / "profiles" / "new.toml"
    problems = validate_profile(data, str(path), path.resolve().parent)
    if not any(p.is_error for p in problems):
        plan = plan_profile(Profile(path=path, data=data), folder / "runs" / "<new-run>", hardware)
        problems += plan.problems
        assert plan.command_line()
    return problems


def _well_formed(problems: list[Problem]) -> None:
    for problem in problems:
        assert isinstance(problem, Problem) and problem.severity in ("error", "warning", "note")
        line = str(problem)
        # no traceback's frame lines (a newline, then '  File "…", line N'), not the word: a data file may hold any
        # text, "Traceback (most recent call last)" included, and a message rightly quotes it
        assert line.strip() and '\n  File "' not in line, line


# ------------------------------------------------------------------ the proofs


@FUZZ
@given(changes=edits, box=st.sampled_from(sorted(BOXES)))
def test_generated_profiles_never_raise_in_validate_plan_or_the_editor(tmp_path: Path, changes: list,
                                                                      box: str) -> None:
    data = mutated(changes)
    _well_formed(validate_profile(data, "p.toml", tmp_path))
    _well_formed(editor_check(data, tmp_path, BOXES[box]))


shapes = st.one_of(values, st.dictionaries(st.text(max_size=10), values, max_size=5),
                   st.dictionaries(st.sampled_from(sorted(SCHEMA)), values, max_size=6))


@FUZZ
@given(data=shapes)
def test_profiles_of_any_shape_never_raise(tmp_path: Path, data: Any) -> None:
    _well_formed(validate_profile(data, "p.toml", tmp_path))
    if isinstance(data, dict):
        _well_formed(editor_check(data, tmp_path, BOXES["no_driver"]))


@FUZZ
@given(key=st.sampled_from([".".join(k) for k in KEYS if k[0] != "training"]), value=values)
@example(key="hardware.gpus", value=[[]])  # found by this test: a list in the GPU list was hashed
def test_every_schema_key_checks_any_value(key: str, value: Any) -> None:
    _well_formed(check_value("p.toml", key, value))


def _toml_lines() -> st.SearchStrategy[str]:
    lines = DEMO_TEXT.splitlines()
    junk = st.one_of(st.text(max_size=30), st.sampled_from(['[', '[[x]]', 'a = ', '= 1', '[training', 'x = """',
                                                            '[model.config]', 'gpus = [0, "a", -1]', '\x00',
                                                            'max_steps = 1e400', 'name = "\\ud800"']))
    return st.lists(st.one_of(st.sampled_from(lines), junk), max_size=40).map("\n".join)


@FUZZ
@given(text=_toml_lines(), overrides=st.lists(st.text(max_size=30), max_size=3))
def test_malformed_profile_files_and_overrides_are_problems_not_tracebacks(tmp_path: Path, text: str,
                                                                           overrides: list[str]) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        profile = load_profile(path, overrides)
    except ProfileError as exc:
        _well_formed(exc.problems)
        assert exc.problems
    else:
        _well_formed(profile.notes)
    for raw in overrides:
        try:
            parse_override(raw)
            apply_overrides(copy.deepcopy(DEMO), [raw])
        except ProfileError as exc:
            _well_formed(exc.problems)


@FUZZ
@given(content=st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))),
       suffix=st.sampled_from([".csv", ".json", ".jsonl"]), num_labels=st.integers(1, 5))
def test_any_data_file_content_is_checked_without_a_traceback(tmp_path: Path, content: str, suffix: str,
                                                              num_labels: int) -> None:
    (tmp_path / f"train{suffix}").write_text(content, encoding="utf-8", errors="surrogatepass")
    data = mutated([("set", ("data", "train_file"), f"train{suffix}"), ("drop", ("data", "generate"), None),
                    ("set", ("training", "eval_strategy"), "no"), ("set", ("model", "num_labels"), num_labels)])
    _well_formed(validate_profile(data, "p.toml", tmp_path))


@FUZZ
@given(config=st.dictionaries(st.sampled_from(["distributed_type", "num_processes", "mixed_precision", "gpu_ids",
                                               "deepspeed_config", "fsdp_config", "use_cpu", "num_machines"]),
                              values, max_size=6))
def test_imported_accelerate_configs_merge_into_a_profile_validate_can_read(tmp_path: Path,
                                                                           config: dict[str, Any]) -> None:
    result = import_accelerate_config(config, "c.yaml")
    _well_formed(result.problems)
    _well_formed(validate_profile(result.merge_into(DEMO), "p.toml", tmp_path))


def test_the_generators_reach_the_rules() -> None:
    """A guard on the generators themselves: a sample of them meets errors, warnings and clean plans."""
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(changes=edits)
    def sample(changes: list) -> None:
        problems = validate_profile(mutated(changes), "p.toml", None)
        seen.add("error" if any(p.is_error for p in problems) else "clean")

    sample()
    assert seen == {"error", "clean"}
    assert len(KEYS) > 100  # keys come from the schema and the installed TrainingArguments
