"""How big a model is, from its config alone (a model folder's config.json, or a profile's [model.config]): the
parameter count by architecture family, and the sizes the memory estimate needs (tuitrain.launch.memory).

Pure: a config mapping in (with the model type's defaults for the keys it leaves out), a `ModelShape` out, or
`Unknown` saying why. The families, by the config's model_type:

- BERT-like encoders: bert, roberta (xlm-roberta, camembert), distilbert;
- GPT-2-like decoders: gpt2;
- Llama-like decoders: llama, mistral, qwen2, qwen3, gemma;
- T5-like encoder-decoders: t5, mt5 (seq2seq; classification too).

Any other model type, or a task a family does not serve here, is `Unknown`: never a guess dressed as a figure.
The counts are each family's modules in transformers, layer by layer (tests/test_memory_estimate.py builds tiny
models of every family and task and compares the real count).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

BERT_TYPES = ("bert", "roberta", "xlm-roberta", "camembert")
LLAMA_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma")
KNOWN_TYPES = (*BERT_TYPES, "distilbert", "gpt2", *LLAMA_TYPES, "t5", "mt5")
FAMILIES = "BERT-like encoders, GPT-2/Llama-like decoders, T5-like encoder-decoders"
# peft's default LoRA layers for these types (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING; a test compares)
LORA_DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("bert", "roberta", "xlm-roberta"), ("query", "value")), "gpt2": ("c_attn",),
    **dict.fromkeys(LLAMA_TYPES, ("q_proj", "v_proj")), "t5": ("q", "v"), "mt5": ("q", "v"),
}


@dataclass(frozen=True)
class Linear:
    """Linear layers of the blocks, all of one name and shape: what LoRA adapts and quantization packs."""

    name: str  # the module's path inside a block ("self_attn.q_proj"); peft's target_modules match its end
    inputs: int
    outputs: int
    count: int  # how many the model has (one a block, times the blocks)

    @property
    def parameters(self) -> int:
        return self.inputs * self.outputs * self.count


@dataclass(frozen=True)
class ModelShape:
    model_type: str
    style: str  # whose activations it keeps: "bert", "gpt2", "llama" or "t5" (tuitrain.launch.memory)
    parameters: int  # every parameter, the task's head included
    blocks: int  # transformer blocks (T5: the encoder's and the decoder's)
    block_parameters: int  # the largest block's
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    linears: tuple[Linear, ...]
    head_parameters: int = 0  # a classification head's (trained in full under LoRA)
    output_weights: int = 0  # the matrices after the blocks (pooler, classifier, output layer): autocast copies them
    decoder_blocks: int = 0  # T5: the decoder's share of `blocks` (its tokens are the targets')
    eager_attention: bool = False  # keeps every attention score for backward (T5's attention; "eager")

    def to_dict(self) -> dict[str, Any]:
        return {"model_type": self.model_type, "parameters": self.parameters, "blocks": self.blocks,
                "hidden": self.hidden, "intermediate": self.intermediate, "heads": self.heads,
                "kv_heads": self.kv_heads, "vocab": self.vocab}


@dataclass(frozen=True)
class Unknown:
    why: str


class _Refused(Exception):
    """A key the count needs is missing, or holds no size; the message says which."""


class _Config:
    """A config's keys, with the model type's defaults for those it leaves out."""

    def __init__(self, model_type: str, config: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
        self.model_type, self.config, self.defaults = model_type, config, defaults

    def value(self, name: str, default: Any = None) -> Any:
        for source in (self.config, self.defaults):
            if source.get(name) is not None:
                return source[name]
        if default is not None:
            return default
        raise _Refused(f"the {self.model_type} config has no {name}")

    def size(self, name: str, default: int | None = None, least: int = 1) -> int:
        found = self.value(name, default)
        if isinstance(found, bool) or not isinstance(found, int) or found < least:
            raise _Refused(f"the {self.model_type} config's {name} = {found!r} is no size")
        return found


def model_shape(config: Mapping[str, Any], task: str, num_labels: int = 2, vocab_at_least: int = 0,
                defaults: Mapping[str, Any] | None = None) -> ModelShape | Unknown:
    """The shape of the model `task` builds from `config`. `defaults`: the model type's config defaults, for the
    keys `config` leaves out (transformers fills them in the same way). `vocab_at_least`: the tokenizer's length
    (the engine grows a from-config model's vocabulary to it)."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        return Unknown("the config names no model_type")
    if model_type not in KNOWN_TYPES:
        return Unknown(f"model type {model_type!r} is not one the estimate knows ({FAMILIES}: "
                       f"{', '.join(KNOWN_TYPES)})")
    c = _Config(model_type, config, defaults or {})
    try:
        vocab = max(c.size("vocab_size"), vocab_at_least)
        if model_type in BERT_TYPES:
            return _bert(model_type, c, task, num_labels, vocab)
        if model_type == "distilbert":
            return _distilbert(c, task, num_labels, vocab)
        if model_type == "gpt2":
            return _gpt2(c, task, num_labels, vocab)
        if model_type in LLAMA_TYPES:
            return _llama(model_type, c, task, num_labels, vocab, config)
        return _t5(model_type, c, task, num_labels, vocab)
    except _Refused as refused:
        return Unknown(str(refused))


def _task_unknown(model_type: str, task: str) -> Unknown:
    return Unknown(f"a {model_type} model for {task} is not one the estimate knows")


def _bert(model_type: str, c: _Config, task: str, n: int, vocab: int) -> ModelShape | Unknown:
    h, layers, inner = c.size("hidden_size"), c.size("num_hidden_layers"), c.size("intermediate_size")
    heads = c.size("num_attention_heads")
    embeddings = (vocab + c.size("max_position_embeddings") + c.size("type_vocab_size", least=0)) * h + 2 * h
    linears = (Linear("attention.self.query", h, h, layers), Linear("attention.self.key", h, h, layers),
               Linear("attention.self.value", h, h, layers), Linear("attention.output.dense", h, h, layers),
               Linear("intermediate.dense", h, inner, layers), Linear("output.dense", inner, h, layers))
    block = 4 * (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h) + 2 * h
    roberta = model_type != "bert"
    classifier = 0
    if task == "sequence-classification":  # bert: its pooler, then a classifier; roberta: a head of the same size
        head, matrices = (h * h + h) + (h * n + n), h * h + h * n
        classifier = head if roberta else h * n + n
    elif task == "token-classification":
        head = classifier = h * n + n
        matrices = h * n
    elif task == "causal-lm":  # the LM head's transform, its norm, the decoder (tied unless said) and its bias
        head = (h * h + h) + 2 * h + vocab + (0 if c.value("tie_word_embeddings", default=True) else vocab * h)
        matrices = h * h + vocab * h
    else:
        return _task_unknown(model_type, task)
    return ModelShape(model_type, "bert", embeddings + layers * block + head, layers, block, h, inner, heads, heads,
                      h // heads, vocab, linears, head_parameters=classifier, output_weights=matrices)


def _distilbert(c: _Config, task: str, n: int, vocab: int) -> ModelShape | Unknown:
    h, layers, inner, heads = c.size("dim"), c.size("n_layers"), c.size("hidden_dim"), c.size("n_heads")
    embeddings = (vocab + c.size("max_position_embeddings")) * h + 2 * h
    linears = (*(Linear(f"attention.{name}", h, h, layers) for name in ("q_lin", "k_lin", "v_lin", "out_lin")),
               Linear("ffn.lin1", h, inner, layers), Linear("ffn.lin2", inner, h, layers))
    block = 4 * (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h) + 2 * h
    if task == "sequence-classification":
        head, matrices = (h * h + h) + (h * n + n), h * h + h * n
    elif task == "token-classification":
        head, matrices = h * n + n, h * n
    else:
        return _task_unknown("distilbert", task)
    return ModelShape("distilbert", "bert", embeddings + layers * block + head, layers, block, h, inner, heads, heads,
                      h // heads, vocab, linears, head_parameters=head, output_weights=matrices)


def _gpt2(c: _Config, task: str, n: int, vocab: int) -> ModelShape | Unknown:
    h, layers, heads = c.size("n_embd"), c.size("n_layer"), c.size("n_head")
    inner = c.size("n_inner", default=4 * h)
    embeddings = (vocab + c.size("n_positions")) * h
    linears = (Linear("attn.c_attn", h, 3 * h, layers), Linear("attn.c_proj", h, h, layers),
               Linear("mlp.c_fc", h, inner, layers), Linear("mlp.c_proj", inner, h, layers))
    block = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h)
    if task == "causal-lm":
        head, classifier = (0 if c.value("tie_word_embeddings", default=True) else vocab * h), 0
    elif task == "sequence-classification":
        head = classifier = h * n
    elif task == "token-classification":
        head = classifier = h * n + n
    else:
        return _task_unknown("gpt2", task)
    total = embeddings + layers * block + 2 * h + head
    return ModelShape("gpt2", "gpt2", total, layers, block, h, inner, heads, heads, h // heads, vocab, linears,
                      head_parameters=classifier, output_weights=vocab * h if task == "causal-lm" else h * n)


def _llama(model_type: str, c: _Config, task: str, n: int, vocab: int, config: Mapping[str, Any]) -> ModelShape | Unknown:
    h, layers, inner = c.size("hidden_size"), c.size("num_hidden_layers"), c.size("intermediate_size")
    heads = c.size("num_attention_heads")
    kv = c.size("num_key_value_heads", default=heads)
    head_dim = c.size("head_dim", default=max(h // heads, 1))
    q, k = heads * head_dim, kv * head_dim
    qkv_bias = model_type == "qwen2" or (model_type != "mistral" and bool(c.value("attention_bias", default=False)))
    o_bias = model_type not in ("qwen2", "mistral") and bool(c.value("attention_bias", default=False))
    mlp_bias = model_type == "llama" and bool(c.value("mlp_bias", default=False))
    linears = (Linear("self_attn.q_proj", h, q, layers), Linear("self_attn.k_proj", h, k, layers),
               Linear("self_attn.v_proj", h, k, layers), Linear("self_attn.o_proj", q, h, layers),
               Linear("mlp.gate_proj", h, inner, layers), Linear("mlp.up_proj", h, inner, layers),
               Linear("mlp.down_proj", inner, h, layers))
    block = (h * q + h * k * 2 + q * h + (q + 2 * k if qkv_bias else 0) + (h if o_bias else 0)
             + 3 * h * inner + (2 * inner + h if mlp_bias else 0) + 2 * h
             + (2 * head_dim if model_type == "qwen3" else 0))
    if task == "causal-lm":
        head, classifier = (0 if c.value("tie_word_embeddings", default=False) else vocab * h), 0
    elif task == "sequence-classification":
        head = classifier = h * n
    elif task == "token-classification":
        head = classifier = h * n + n
    else:
        return _task_unknown(model_type, task)
    eager = str(config.get("attn_implementation") or config.get("_attn_implementation") or "") == "eager"
    return ModelShape(model_type, "llama", vocab * h + layers * block + h + head, layers, block, h, inner, heads, kv,
                      head_dim, vocab, linears, head_parameters=classifier, eager_attention=eager,
                      output_weights=vocab * h if task == "causal-lm" else h * n)


def _t5(model_type: str, c: _Config, task: str, n: int, vocab: int) -> ModelShape | Unknown:
    if task == "causal-lm":
        return _task_unknown(model_type, task)
    d, ff, heads, d_kv = c.size("d_model"), c.size("d_ff"), c.size("num_heads"), c.size("d_kv")
    encoder = c.size("num_layers")
    # token classification runs the encoder alone; sequence classification both, its decoder over the input
    decoder = 0 if task == "token-classification" else c.size("num_decoder_layers", default=encoder)
    buckets = c.size("relative_attention_num_buckets")
    gated = str(c.value("feed_forward_proj", default="relu")).startswith("gated")
    inner = heads * d_kv
    attention = 4 * d * inner
    feed_forward = (2 if gated else 1) * d * ff + ff * d
    encoder_block, decoder_block = attention + feed_forward + 2 * d, 2 * attention + feed_forward + 3 * d
    wi = ("DenseReluDense.wi_0", "DenseReluDense.wi_1") if gated else ("DenseReluDense.wi",)
    both = encoder + decoder
    linears = (*(Linear(f"SelfAttention.{name}", d, inner, both) for name in ("q", "k", "v")),
               Linear("SelfAttention.o", inner, d, both),
               *(Linear(f"EncDecAttention.{name}", d, inner, decoder) for name in ("q", "k", "v") if decoder),
               *([Linear("EncDecAttention.o", inner, d, decoder)] if decoder else []),
               *(Linear(name, d, ff, both) for name in wi), Linear("DenseReluDense.wo", ff, d, both))
    # transformers 5 ties T5's and mT5's output layer to the embeddings whatever the config says
    head = {"seq2seq": 0, "sequence-classification": (d * d + d) + (d * n + n), "token-classification": d * n + n}[task]
    total = (vocab * d + encoder * encoder_block + decoder * decoder_block + (2 if decoder else 1) * (buckets * heads + d)
             + head)
    matrices = {"seq2seq": vocab * d, "sequence-classification": d * d + d * n, "token-classification": d * n}[task]
    return ModelShape(model_type, "t5", total, both, decoder_block if decoder else encoder_block, d, ff, heads, heads,
                      d_kv, vocab, linears, head_parameters=head, decoder_blocks=decoder, eager_attention=True,
                      output_weights=matrices)
