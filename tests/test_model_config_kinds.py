"""The shipped [model.config] types (tuitrain/profile/model_config_snapshot.json) are the installed
transformers' own, and what validation refuses with them transformers refuses too (issue 27)."""

from __future__ import annotations

import pytest

from model_config_kinds import MODEL_TYPES, installed_table
from tuitrain.profile.model_config import SNAPSHOT, _snapshot, accepts, config_keys, exact


def test_the_snapshot_is_the_installed_transformers_table() -> None:
    installed = installed_table()
    shipped = _snapshot()
    if shipped.get("version") != installed["version"]:
        pytest.skip(f"the snapshot is of transformers {shipped.get('version')}, {installed['version']} is installed")
    assert shipped == installed, f"regenerate {SNAPSHOT.name}: .venv/bin/python tests/model_config_kinds.py --write"
    assert sorted(shipped["model_types"]) == sorted(MODEL_TYPES)


@pytest.mark.parametrize("model_type", ["bert", "gpt2", "llama", "t5"])
def test_what_the_table_refuses_transformers_refuses(model_type: str) -> None:
    """For each int, float and bool key of the model type's own config: a value of another kind is refused by
    the table and by AutoConfig.for_model (a strict dataclass since transformers 5), one of its kind is taken
    by both. (PretrainedConfig's own few keys are not checked by transformers; the table still refuses a
    string for a bool there.)"""
    from transformers import AutoConfig

    if not exact(model_type):
        pytest.skip("the snapshot is of another transformers version")
    samples = {"int": 3, "float": 0.5, "bool": True, "str": "x"}
    checked = 0
    own = _snapshot()["model_types"][model_type]
    for key, spec in config_keys(model_type).items():
        if key not in own or spec.kinds not in (("int",), ("float",), ("bool",), ("float", "int")) or key.endswith("token_id"):
            continue
        good = samples[spec.kinds[0]]
        for bad in ("x", [1]) + ((1,) if spec.kinds == ("float",) else ()):
            assert not accepts(spec, bad, strict=True), (key, bad)
            with pytest.raises(Exception, match=key):
                AutoConfig.for_model(model_type, **{key: bad})
        assert accepts(spec, good, strict=True)
        checked += 1
    assert checked >= 5


def test_another_version_is_read_loosely() -> None:
    (spec,) = [s for k, s in config_keys("bert").items() if k == "layer_norm_eps"]
    assert not accepts(spec, 0, strict=True) and accepts(spec, 0, strict=False)
    assert not accepts(spec, "0", strict=False)


def test_a_model_type_not_listed_gets_the_keys_every_listed_type_shares() -> None:
    keys = config_keys("megatron-bert")
    assert keys["hidden_size"].kinds == ("int",) and keys["is_decoder"].kinds == ("bool",)
    assert not exact("megatron-bert")  # never strict: its own float keys may take whole numbers
