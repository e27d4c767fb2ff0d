"""tuitrain.yaml_text writes the accelerate configs without PyYAML; PyYAML must read back exactly
what was written, for awkward scalars and for every config the fixture profiles plan to."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuitrain.launch.plan import export_accelerate_config
from tuitrain.profile import Profile, builtin_profile_path, settings_with_defaults
from tuitrain.yaml_text import dump, scalar

FIXTURES = Path(__file__).parent / "fixtures" / "accelerate"
PROFILES = [builtin_profile_path(), *sorted(FIXTURES.glob("*.toml"))]

AWKWARD = ["", "yes", "No", "ON", "off", "y", "n", "true", "False", "null", "NULL", "~", "0,1", "1", "007", "1e3",
           "3.0e+5", ".inf", ".nan", "-", "a: b", "a #b", "#x", "[x]", "{x}", "*x", "&x", "!x", "%x", "@x", "`x",
           "'x'", '"x"', "x\ny", "tab\there", "é", "日本", "\u2028", "d😀/ds.json", "\x00", "\x7f", "\x85", "\ufeff",
           "back\\slash", " lead", "trail ", "/tmp/a b", "C:\\x",
           "0x1F", "0o17", "1_000", "12:30", "2026-11-23", "=", "<<", "?", "x,y", "all", "BertLayer", "MULTI_GPU"]
NUMBERS = [0, -1, 10**20, 0.0, -0.0, 1.5, 1e-05, 1e20, 3e-8, 123456.789, float("inf"), float("-inf")]


@pytest.mark.parametrize("value", AWKWARD + NUMBERS + [None, True, False])
def test_every_scalar_reads_back_as_itself(value: Any) -> None:
    assert yaml.safe_load(f"key: {scalar(value)}\n") == {"key": value}


def test_nan_reads_back_as_nan() -> None:
    back = yaml.safe_load(dump({"x": float("nan")}))["x"]
    assert back != back


def test_nested_mappings_lists_and_empties_read_back() -> None:
    data = {"b": {"y": [], "x": [1, {"p": "q", "r": [3, [4, 5]]}, []], "z": {}}, "a": [{"k": "v", "w": None}],
            "yes": "no", "": "empty key", "c": [[1, 2], [], [{}]]}
    text = dump(data, ["first line", ""])
    assert text.startswith("# first line\n#\n")
    assert yaml.safe_load(text) == data
    assert text.index("\na:") < text.index("\nb:") < text.index("\nc:")  # keys sorted, as accelerate writes them


def test_an_empty_mapping_is_written_as_one() -> None:
    assert yaml.safe_load(dump({})) == {}


def test_values_yaml_cannot_hold_are_refused() -> None:
    with pytest.raises(TypeError):
        dump({"x": object()})
    with pytest.raises(TypeError):
        dump({1: "x"})


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_the_config_of_every_fixture_profile_reads_back(path: Path) -> None:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    config, _ = export_accelerate_config(settings_with_defaults(Profile(path=path, data=data)))
    assert yaml.safe_load(dump(config)) == config


def test_keys_longer_than_yaml_allows_inline_are_written_as_explicit_keys() -> None:
    data = {"é" * 300: 1, "k" * 2000: {"a": [1, {"b": 2}]}, "x": [{"z" * 1200: 3, "b": 4}]}
    assert yaml.safe_load(dump(data)) == data
