"""The tokenizer: from a folder or Hub id, or trained on the fly on the training text."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from tuitrain.engine.errors import EngineError, not_loadable
from tuitrain.profile.settings import ModelSettings, TrainTokenizerSettings

_CLASSIFICATION_SPECIALS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"}
_CAUSAL_SPECIALS = {"pad_token": "<pad>", "unk_token": "<unk>", "eos_token": "<eos>", "bos_token": "<bos>"}
# T5's order (pad 0, eos 1, unk 2), so a from-scratch T5 config's own token ids fit
_SEQ2SEQ_SPECIALS = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
_ENCODER_TASKS = ("sequence-classification", "token-classification")  # [CLS] text [SEP], as BERT


def train_tokenizer(texts: Iterable[str], spec: TrainTokenizerSettings, task: str) -> Any:
    """Train a small WordLevel or WordPiece tokenizer and wrap it as a fast transformers tokenizer."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = _CLASSIFICATION_SPECIALS if task in _ENCODER_TASKS else _SEQ2SEQ_SPECIALS if task == "seq2seq" else _CAUSAL_SPECIALS
    special_list = list(specials.values())
    unk = specials["unk_token"]
    trainer: trainers.Trainer
    if spec.get("kind", "wordlevel") == "wordpiece":
        tokenizer = Tokenizer(models.WordPiece(unk_token=unk))
        trainer = trainers.WordPieceTrainer(vocab_size=spec["vocab_size"], special_tokens=special_list)
    else:
        tokenizer = Tokenizer(models.WordLevel(unk_token=unk))
        trainer = trainers.WordLevelTrainer(vocab_size=spec["vocab_size"], special_tokens=special_list)
    if spec.get("lowercase", True):
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(texts, trainer=trainer)
    if task == "seq2seq":  # each sequence ends with </s>, as T5's and BART's tokenizers end theirs
        eos = specials["eos_token"]
        tokenizer.post_processor = processors.TemplateProcessing(single=f"$A {eos}", pair=f"$A {eos} $B:1 {eos}:1",
                                                                 special_tokens=[(eos, tokenizer.token_to_id(eos))])
    if task in _ENCODER_TASKS:
        cls, sep = specials["cls_token"], specials["sep_token"]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{cls} $A {sep}",
            pair=f"{cls} $A {sep} $B:1 {sep}:1",
            special_tokens=[(cls, tokenizer.token_to_id(cls)), (sep, tokenizer.token_to_id(sep))],
        )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, **specials)


def load_tokenizer(source: str, trust_remote_code: bool, key: str = "model.tokenizer") -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    except OSError as exc:
        raise EngineError(not_loadable(key, source, "tokenizer", exc)) from exc


def build_tokenizer(model: ModelSettings, train_texts: Any, saved_dir: Path, is_main: bool) -> Any:
    """A trained-on-the-fly tokenizer is saved beside the checkpoints, so every rank and every
    resumed run reads the same vocabulary."""
    source = model.get("tokenizer") or model.get("name_or_path")
    if source:
        key = "model.tokenizer" if model.get("tokenizer") else "model.name_or_path"
        return load_tokenizer(source, model.get("trust_remote_code", False), key)
    if (saved_dir / "tokenizer.json").exists():
        return load_tokenizer(str(saved_dir), False)
    if not is_main:
        raise RuntimeError(f"this machine's main process did not save a tokenizer to {saved_dir}")
    spec = model["train_tokenizer"]
    if spec is None:  # validation refuses it first (rules.model); a profile run unchecked is told here
        raise EngineError("[model]: no tokenizer: set model.tokenizer, or add a [model.train_tokenizer] table")
    tokenizer = train_tokenizer(train_texts, spec, model["task"])
    try:
        tokenizer.save_pretrained(str(saved_dir))
    except OSError as exc:
        raise EngineError(f"run.output_dir: cannot write {saved_dir} ({exc.strerror or exc}); "
                          "set run.output_dir to a folder you can write") from exc
    return tokenizer
