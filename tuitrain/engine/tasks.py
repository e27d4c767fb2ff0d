"""What differs between the engine's tasks: how a split is tokenized, how batches are padded, which
metrics score the predictions, and which Trainer and TrainingArguments classes run them."""

from __future__ import annotations

from typing import Any, Callable

from tuitrain.engine import data as data_mod
from tuitrain.engine import metrics as metrics_mod
from tuitrain.profile.settings import DataSettings, ModelSettings

SEQ2SEQ = "seq2seq"
TOKEN_CLASSIFICATION = "token-classification"


def tag_names_for(model: ModelSettings, data: DataSettings, splits: list[Any]) -> list[str] | None:
    """Token classification's tag names in class id order; None for the other tasks."""
    if model["task"] != TOKEN_CLASSIFICATION:
        return None
    from tuitrain.profile.generated import GENERATED_LABELS

    return data_mod.tag_names(splits, data, model.get("labels"), GENERATED_LABELS.get(data.get("generate") or ""))


def tokenize_split(task: str, dataset: Any, tokenizer: Any, data: DataSettings, labels: list[str] | None,
                   split: str) -> Any:
    if task == "sequence-classification":
        return data_mod.tokenize_for_classification(dataset, tokenizer, data)
    if task == TOKEN_CLASSIFICATION:
        return data_mod.tokenize_for_token_classification(dataset, tokenizer, data, labels or [], split)
    if task == SEQ2SEQ:
        return data_mod.tokenize_for_seq2seq(dataset, tokenizer, data)
    return data_mod.tokenize_for_causal_lm(dataset, tokenizer, data)


def collator(task: str, tokenizer: Any, model: Any) -> Any:
    """Pads each batch: tags with -100 (token classification), targets with -100 and the decoder's
    inputs made from them (seq2seq); causal LM blocks are all one length already."""
    import transformers

    if task == "sequence-classification":
        return transformers.DataCollatorWithPadding(tokenizer)
    if task == TOKEN_CLASSIFICATION:
        return transformers.DataCollatorForTokenClassification(tokenizer)
    if task == SEQ2SEQ:
        return transformers.DataCollatorForSeq2Seq(tokenizer, model=model)
    return transformers.default_data_collator


def compute_metrics(task: str, names: list[str], model: ModelSettings, tokenizer: Any,
                    labels: list[str] | None) -> Callable[[Any], dict[str, float]] | None:
    if task == "sequence-classification":
        return metrics_mod.classification_metrics(names, model["num_labels"])
    if task == TOKEN_CLASSIFICATION:
        return metrics_mod.token_classification_metrics(names, labels or [])
    if task == SEQ2SEQ:
        return metrics_mod.seq2seq_metrics(names, tokenizer)
    return None


def trainer_class(task: str) -> Any:
    from tuitrain.engine.trainer import EngineSeq2SeqTrainer, EngineTrainer

    return EngineSeq2SeqTrainer if task == SEQ2SEQ else EngineTrainer


def arguments_class(task: str) -> Any:
    import transformers

    return transformers.Seq2SeqTrainingArguments if task == SEQ2SEQ else transformers.TrainingArguments

