"""An adapter checkpoint is judged with the base it adapts: a damaged lora-base/ (the from-scratch base a LoRA
run keeps once in its output folder) makes every adapter checkpoint there incomplete, named in one line, so
resume and export never load it (a user's day found a traceback in the rank and in export)."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

from tuitrain.rundir.checkpoints import LORA_BASE, inspect_checkpoint, list_checkpoints


def safetensors(path: Path, floats: int) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [floats], "data_offsets": [0, 4 * floats]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(4 * floats))


def torch_file(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:  # torch.save's format: a zip archive
        archive.writestr("archive/data.pkl", b"x")


def adapter_checkpoint(output: Path, step: int) -> Path:
    folder = output / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    safetensors(folder / "adapter_model.safetensors", 16)
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        torch_file(folder / name)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    return folder


def test_a_truncated_or_missing_base_makes_its_adapter_checkpoints_incomplete(tmp_path: Path) -> None:
    output = tmp_path / "output"
    first, second = adapter_checkpoint(output, 2), adapter_checkpoint(output, 4)
    base = output / LORA_BASE
    base.mkdir()
    (base / "config.json").write_text("{}")
    safetensors(base / "model.safetensors", 1000)
    assert all(c.complete for c in list_checkpoints(output)), [c.missing for c in list_checkpoints(output)]

    whole = (base / "model.safetensors").stat().st_size
    with open(base / "model.safetensors", "r+b") as handle:
        handle.truncate(3000)
    for folder in (first, second):
        checkpoint = inspect_checkpoint(folder)
        assert not checkpoint.complete
        assert checkpoint.missing == ((f"lora-base/model.safetensors is truncated (3000 of {whole} bytes) "
                                       "(the adapter's base)"),)

    (base / "model.safetensors").unlink()
    (base / "config.json").unlink()
    assert inspect_checkpoint(first).missing == ("lora-base/config.json is missing (the adapter's base)",)


def test_a_full_model_checkpoint_beside_a_base_folder_is_not_judged_by_it(tmp_path: Path) -> None:
    output = tmp_path / "output"
    folder = adapter_checkpoint(output, 2)
    (folder / "adapter_config.json").unlink()
    (folder / "adapter_model.safetensors").rename(folder / "model.safetensors")
    (output / LORA_BASE).mkdir()  # empty: nothing this checkpoint needs
    assert inspect_checkpoint(folder).complete, inspect_checkpoint(folder).missing
