"""`python -m tuitrain.engine.export PROFILE CHECKPOINT OUT`: a checkpoint as a full model folder.

A LoRA checkpoint's adapter is merged into its base (the base kept in the run's lora-base/, or
model.name_or_path); any other checkpoint is saved again without the optimizer and the Trainer's
state. OUT then loads with `from_pretrained`, the tokenizer beside the weights. The CLI runs this
in a child interpreter (it never imports torch itself); a problem it can name is one line on
stderr, prefixed "error: ", and exit status 2.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

from tuitrain.atomic import follow_umask
from tuitrain.engine.errors import EngineError, first_line
from tuitrain.engine.lora import LORA_BASE, import_peft
from tuitrain.engine.model import auto_class
from tuitrain.profile.settings import ModelSettings, Settings


def _profile(path: Path) -> Settings:
    from tuitrain.profile import Profile, settings_with_defaults

    with open(path, "rb") as handle:
        return settings_with_defaults(Profile(path=path, data=tomllib.load(handle), notes=[]))


def _base_model(model_spec: ModelSettings, kept: Path) -> Any:
    """The model an adapter was trained on: the from-scratch weights the run kept, or the pretrained
    model with the config the run kept (its labels)."""
    from transformers import AutoConfig

    auto = auto_class(model_spec["task"])
    remote = bool(model_spec["trust_remote_code"])
    if (kept / "model.safetensors").is_file() or (kept / "model.safetensors.index.json").is_file():
        return auto.from_pretrained(str(kept))
    if not model_spec["name_or_path"]:
        raise EngineError(f"{kept} holds no base model (the run kept none); the adapter cannot be merged")
    config = AutoConfig.from_pretrained(str(kept), trust_remote_code=remote) if (kept / "config.json").is_file() else None
    extra = {"config": config} if config is not None else {}
    return auto.from_pretrained(model_spec["name_or_path"], trust_remote_code=remote, **extra)


def _tokenizer(checkpoint: Path, model_spec: ModelSettings) -> Any | None:
    from transformers import AutoTokenizer

    for folder in (checkpoint, checkpoint.parent / "tokenizer"):
        if (folder / "tokenizer_config.json").is_file():
            return AutoTokenizer.from_pretrained(str(folder))
    source = model_spec["tokenizer"] or model_spec["name_or_path"]
    return AutoTokenizer.from_pretrained(source, trust_remote_code=bool(model_spec["trust_remote_code"])) if source else None


def export(profile_path: Path, checkpoint: Path, out: Path) -> str:
    """Write the full model of `checkpoint` to `out`; returns what was done, in a few words."""
    model_spec = _profile(profile_path)["model"]
    if (checkpoint / "adapter_config.json").is_file():
        peft = import_peft()
        base = _base_model(model_spec, checkpoint.parent / LORA_BASE)
        model = peft.PeftModel.from_pretrained(base, str(checkpoint)).merge_and_unload()
        how = "LoRA adapter merged into its base model"
    else:
        model = auto_class(model_spec["task"]).from_pretrained(str(checkpoint))
        how = "model saved without the training state"
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer = _tokenizer(checkpoint, model_spec)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(out))
    follow_umask(out)
    return how


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m tuitrain.engine.export PROFILE CHECKPOINT OUT", file=sys.stderr)
        return 2
    profile, checkpoint, out = (Path(a) for a in argv)
    try:
        print(export(profile, checkpoint, out))
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {out}: cannot write the model ({first_line(exc)})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
