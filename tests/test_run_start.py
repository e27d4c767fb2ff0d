"""Starting a run: what is frozen with it, and how its folder is named."""

from __future__ import annotations

from tuitrain.runs.start import _slug, freeze_paths


def test_every_path_typed_key_is_frozen_absolute_so_a_resume_finds_it(tmp_path):
    """A resume runs the frozen profile from the run directory: a relative DeepSpeed config_file,
    NVMe offload folders or data files would point nowhere."""
    (tmp_path / "ds.json").write_text("{}")
    (tmp_path / "model").mkdir()
    data = {
        "data": {"train_file": "data/train.csv", "validation_file": "data/val.csv"},
        "model": {"name_or_path": "model", "tokenizer": "bert-base-uncased"},
        "distributed": {"deepspeed": {"config_file": "ds.json", "offload_param_nvme_path": "nvme",
                                      "offload_optimizer_nvme_path": "/abs/nvme"}},
    }
    frozen = freeze_paths(data, tmp_path)
    assert frozen["distributed"]["deepspeed"]["config_file"] == str(tmp_path / "ds.json")
    assert frozen["distributed"]["deepspeed"]["offload_param_nvme_path"] == str(tmp_path / "nvme")
    assert frozen["distributed"]["deepspeed"]["offload_optimizer_nvme_path"] == "/abs/nvme"
    assert frozen["data"]["train_file"] == str(tmp_path / "data/train.csv")
    assert frozen["model"]["name_or_path"] == str(tmp_path / "model")
    assert frozen["model"]["tokenizer"] == "bert-base-uncased"  # a Hub id stays one
    assert data["distributed"]["deepspeed"]["config_file"] == "ds.json"  # the profile itself is untouched


def test_a_run_name_keeps_its_letters_in_any_script():
    assert _slug("тест ünïcode") == "тест-ünïcode"
    assert _slug("a/b\\c:d") == "a-b-c-d"
    assert _slug("  ") == "run"
