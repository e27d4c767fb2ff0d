"""Will it fit: each GPU's memory for a run, estimated from the model's shape (tuitrain.launch.model_size) and the
profile's training (precision, optimizer, strategy, batch, sequence length, checkpointing, LoRA), before anything
is loaded (tuitrain.launch.memory_fit compares it with the GPUs' free memory). Pure: data in, data out. `plan` (text
and --json), `validate`, the run's preflight (launch.planner) and the editor's preview all ask it through
`memory_fit.memory_check`.

The model, per GPU, in bytes (what `torch.cuda.max_memory_allocated` measures is `peak`):

- weights: every parameter in the dtype it is loaded in (a pretrained model's config dtype, else float32; a
  quantized base 0.5 or 1 byte for its blocks' linear layers); gradients and optimizer state for the trained ones
  (LoRA: the adapters and a classifier head, in float32);
- optimizer state: states a trained parameter (AdamW 2, 8-bit AdamW 2 of one byte, SGD 0, Adafactor factored, GaLore
  of rank r on the blocks' linear layers), in the parameters' dtype unless the optimizer fixes it; DeepSpeed with
  mixed precision keeps a float32 master copy and float32 states;
- the strategy: DDP keeps a second copy of the gradients (its buckets); FSDP shards weights, gradients and optimizer
  state over its group (shard_grad_op keeps the whole weights gathered) and gathers the embedding layers and two
  blocks at a time; ZeRO-1/2/3 shard optimizer state / + gradients / + weights; offload moves them to the CPU;
- activations: per token and block, bytes of hidden size and of intermediate size kept for backward, measured for
  each family's modules in float32, in mixed precision (plus autocast's 16-bit copies of the weights) and in 16-bit
  weights; attention scores only where the attention keeps them (T5, "eager"); one block's worth more while
  backward works on it; gradient checkpointing keeps each block's input and recomputes one block;
- logits: the loss upcasts them to float32, keeps log-softmax and its gradient: 12 bytes a token and vocabulary entry;
- the peak: weights + optimizer state + the strategy's buffers + the larger of gradients and activations (gradients
  are freed after each optimizer step), or their sum while gradients accumulate over several micro-batches (or
  DeepSpeed keeps them);
- beside the tensors: the CUDA context and the caching allocator's slack, what nvidia-smi shows more than the peak.

Its error: parameter counts are exact (tested against transformers), activations within about 30 %, the strategy's
buffers within about 50 %: `margin` adds them up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuitrain.launch.model_size import LORA_DEFAULT_TARGETS, Linear, ModelShape
from tuitrain.profile.implied import mixed_precision
from tuitrain.profile.settings import Settings

GIB = 2**30
CUDA_CONTEXT = GIB // 2  # the CUDA context and its kernels, outside the allocator
NCCL_BUFFERS = GIB // 4  # NCCL's own buffers with several processes
ALLOCATOR_SLACK = 0.05  # the caching allocator reserves more than it hands out
LOGIT_BYTES = 12  # a logit: float32 upcast, log-softmax kept for backward, its gradient
SCORE_BYTES = 12  # an attention score kept for backward: scores, float32 softmax, dropout
LORA_ACTIVATIONS = 0.85  # frozen layers keep no input for their weights' gradients
ACTIVATION_ERROR, BUFFER_ERROR, COUNT_ERROR = 0.30, 0.50, 0.02

DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "bf16": 2, "fp16": 2, "fp32": 4}
# bytes a token keeps for backward in one block, by family and precision: (× hidden size, × intermediate size),
# and outside the blocks (× hidden size: embeddings, final norm, the output layer's input). Measured with
# torch.autograd.graph.saved_tensors_hooks on each family's modules (tests/test_memory_estimate.py measures again).
# T5: the encoder's blocks, its decoder's are DECODER_BLOCK (a second attention over the encoder's output).
ACTIVATION_BYTES: dict[str, dict[str, tuple[float, float, float]]] = {
    "llama": {"fp32": (40, 16, 13), "mixed": (34, 8, 11), "half": (24, 8, 9)},
    "gpt2": {"fp32": (48, 20, 12), "mixed": (28, 10, 10), "half": (24, 10, 6)},
    "bert": {"fp32": (40, 8, 12), "mixed": (28, 4, 8), "half": (20, 4, 6)},
    "t5": {"fp32": (48, 12, 42), "mixed": (42, 6, 36), "half": (38, 6, 30)},
}
DECODER_BLOCK = {"fp32": (80, 12), "mixed": (72, 6), "half": (64, 6)}

# TrainingArguments.optim -> (states a trained parameter, bytes a state; None: the parameters' dtype)
ADAMW = (2, None)
OPTIMIZERS: dict[str, tuple[int, float | None]] = {
    **dict.fromkeys(("adamw_torch", "adamw_torch_fused", "adamw_torch_xla", "adamw_torch_npu_fused",
                     "adamw_apex_fused", "adamw_anyprecision", "stable_adamw", "schedule_free_adamw",
                     "schedule_free_radam"), ADAMW),
    "grokadamw": (3, None), "ademamix": (3, None), "paged_ademamix_32bit": (3, 4),
    "ademamix_8bit": (3, 1), "paged_ademamix_8bit": (3, 1),
    "adamw_torch_4bit": (2, 0.5), "adamw_torch_8bit": (2, 1),
    **dict.fromkeys(("adamw_bnb_8bit", "adamw_8bit", "paged_adamw_8bit"), (2, 1)), "paged_adamw_32bit": (2, 4),
    "lion_32bit": (1, 4), "paged_lion_32bit": (1, 4), "lion_8bit": (1, 1), "paged_lion_8bit": (1, 1),
    "rmsprop": (1, None), "rmsprop_bnb": (1, 4), "rmsprop_bnb_32bit": (1, 4), "rmsprop_bnb_8bit": (1, 1),
    "adagrad": (1, None), "sgd": (0, None), "schedule_free_sgd": (1, None), "adafactor": (0, None),
    "lomo": (0, None), "adalomo": (0, None),
}
FUSED_INTO_BACKWARD = ("lomo", "adalomo")  # the update runs in backward: no gradients are kept
FOREACH = ("adamw_torch",)  # torch's foreach AdamW: a temporary the size of the parameters at each step
LOW_RANK_DEFAULT_RANK = {"galore": 128, "apollo": 256}


@dataclass(frozen=True)
class MemorySetup:
    """What the estimate needs of a profile (`memory_setup` reads it from the settings)."""

    task: str
    weight_dtype: str = "float32"  # the dtype the weights are loaded in
    mixed: str = "no"  # "no", "bf16", "fp16"
    optimizer: str = "adamw_torch_fused"
    optimizer_args: str = ""
    optimizer_targets: tuple[str, ...] = ()  # training.optim_target_modules (GaLore, APOLLO)
    batch: int = 8
    accumulation: int = 1
    tokens: int = 128  # a sample's tokens (seq2seq: the source's)
    target_tokens: int = 0  # seq2seq: the target's
    checkpointing: bool = False
    strategy: str = "single"
    world: int = 1  # processes in all
    per_machine: int = 1
    fsdp_sharding: str = "full_shard"
    fsdp_offload: bool = False
    zero_stage: int = 2
    offload_optimizer: bool = False
    offload_param: bool = False
    lora_r: int | None = None  # [model.lora]'s rank; None: the whole model trains
    lora_targets: tuple[str, ...] = ()  # empty: peft's default layers for the model type
    quantize: str | None = None
    double_quant: bool = True


@dataclass(frozen=True)
class MemoryEstimate:
    parameters: int
    trained: int
    weights: int
    gradients: int
    optimizer: int
    activations: int
    logits: int
    buffers: int  # the strategy's own: DDP buckets, gathered FSDP / ZeRO-3 blocks, DeepSpeed buckets
    peak: int  # the tensors at the peak: what torch.cuda.max_memory_allocated measures
    runtime: int  # the CUDA context, NCCL and the allocator's slack, beside the tensors
    margin: int  # ± bytes
    accumulating: bool  # gradients counted with the activations
    words: tuple[str, ...] = ()  # how it was counted, one line each

    @property
    def needed(self) -> int:
        """What a GPU must have free for the run."""
        return self.peak + self.runtime

    def to_dict(self) -> dict[str, Any]:
        return {"parameters": self.parameters, "trained": self.trained, "weights": self.weights,
                "gradients": self.gradients, "optimizer": self.optimizer, "activations": self.activations,
                "logits": self.logits, "buffers": self.buffers, "peak": self.peak, "runtime": self.runtime,
                "needed": self.needed, "margin": self.margin, "gradients_with_activations": self.accumulating,
                "model": list(self.words)}


# --------------------------------------------------------------------------- reading a profile

def dtype_of(config: Mapping[str, Any]) -> str:
    """The dtype transformers loads a model of `config` in: its dtype (torch_dtype before transformers 5), else
    float32 (a from-config model, or a config that names none: the weights' own dtype is not read here)."""
    raw = config.get("dtype") or config.get("torch_dtype")
    return str(raw).removeprefix("torch.") if str(raw).removeprefix("torch.") in DTYPE_BYTES else "float32"


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def memory_setup(settings: Settings, config: Mapping[str, Any], processes: int, machines: int,
                 training_defaults: Mapping[str, Any], deepspeed_json: Mapping[str, Any] | None = None) -> MemorySetup:
    """The estimate's view of a profile with defaults. `config`: the model's config (its dtype); `processes`:
    this machine's, of `machines`; `training_defaults`: TrainingArguments' defaults of the keys [training] leaves
    out; `deepspeed_json`: distributed.deepspeed.config_file's content."""
    training = {**training_defaults, **(settings.get("training") or {})}
    model, data, dist = settings["model"], settings["data"], settings["distributed"]
    task = model["task"]
    tokens = _int(data.get("block_size") if task == "causal-lm" else data.get("max_length"), 128)
    fsdp = dist.get("fsdp") or {}
    ds = dist.get("deepspeed") or {}
    stage, offload_optimizer, offload_param = _deepspeed(ds, deepspeed_json)
    lora = model.get("lora")
    targets = training.get("optim_target_modules")
    return MemorySetup(
        task=task, weight_dtype=dtype_of(config), mixed=mixed_precision(settings)[0],
        optimizer=str(training.get("optim") or "adamw_torch_fused"), optimizer_args=str(training.get("optim_args") or ""),
        optimizer_targets=tuple(targets) if isinstance(targets, list) else (str(targets),) if targets else (),
        batch=_int(training.get("per_device_train_batch_size"), 8),
        accumulation=_int(training.get("gradient_accumulation_steps"), 1), tokens=tokens,
        target_tokens=_int(data.get("max_target_length"), 64) if task == "seq2seq" else 0,
        checkpointing=bool(training.get("gradient_checkpointing")) or bool(fsdp.get("activation_checkpointing")),
        strategy=dist["strategy"], world=processes * machines, per_machine=processes,
        fsdp_sharding=str(fsdp.get("sharding_strategy") or "full_shard"), fsdp_offload=bool(fsdp.get("offload_params")),
        zero_stage=stage, offload_optimizer=offload_optimizer, offload_param=offload_param,
        lora_r=int(lora.get("r") or 8) if isinstance(lora, dict) else None,
        lora_targets=tuple(lora.get("target_modules") or ()) if isinstance(lora, dict) else (),
        quantize=lora.get("quantize") if isinstance(lora, dict) else None,
        double_quant=bool(lora.get("double_quant", True)) if isinstance(lora, dict) else True)


def _deepspeed(plugin: Mapping[str, Any], config: Mapping[str, Any] | None) -> tuple[int, bool, bool]:
    """(ZeRO stage, optimizer offloaded, parameters offloaded) from the plugin keys or the DeepSpeed JSON."""
    if config is not None:
        zero = config.get("zero_optimization") or {}
        zero = zero if isinstance(zero, dict) else {}
        offloaded = [isinstance(zero.get(key), dict) and (zero[key].get("device") or "none") != "none"
                     for key in ("offload_optimizer", "offload_param")]
        stage = zero.get("stage")
        return stage if isinstance(stage, int) else 0, offloaded[0], offloaded[1]
    stage = plugin.get("zero_stage")
    return (stage if isinstance(stage, int) else 2, (plugin.get("offload_optimizer_device") or "none") != "none",
            (plugin.get("offload_param_device") or "none") != "none")


# --------------------------------------------------------------------------- the arithmetic

def _targeted(linears: Sequence[Linear], targets: Sequence[str]) -> list[Linear]:
    """The linear layers peft's target_modules names match (the whole name or its end); "all-linear": all."""
    if any(t == "all-linear" for t in targets):
        return list(linears)
    return [lin for lin in linears if any(lin.name == t or lin.name.endswith("." + t) for t in targets)]


def _low_rank(setup: MemorySetup) -> tuple[str, int] | None:
    """("galore" | "apollo", rank) for a GaLore / APOLLO optimizer."""
    for kind, rank in LOW_RANK_DEFAULT_RANK.items():
        if setup.optimizer.startswith(kind):
            found = re.search(r"(?:^|,)\s*rank\s*=\s*(\d+)", setup.optimizer_args)
            return kind, int(found.group(1)) if found else rank
    return None


def _weight_bytes(setup: MemorySetup) -> int:
    return DTYPE_BYTES.get(setup.weight_dtype, 4)


def _mode(setup: MemorySetup) -> str:
    """Which activations a block keeps: "fp32", "mixed" (autocast over float32 weights) or "half" (16-bit weights:
    loaded so, or cast by DeepSpeed and FSDP's mixed precision)."""
    if setup.quantize:
        return "fp32" if setup.mixed == "no" else "mixed"
    if _weight_bytes(setup) == 2 or (setup.mixed != "no" and setup.strategy in ("deepspeed", "fsdp")):
        return "half"
    return "fp32" if setup.mixed == "no" else "mixed"


@dataclass(frozen=True)
class _Counts:
    trained: int
    frozen_bytes: int  # the frozen base's weights
    trained_bytes: float  # bytes a trained parameter is kept in
    state_elements: float  # optimizer state elements
    state_bytes: float
    master_bytes: int  # DeepSpeed's float32 master copy, a trained parameter
    words: list[str]


def _counts(shape: ModelShape, setup: MemorySetup) -> _Counts:
    wb = _weight_bytes(setup)
    words: list[str] = []
    if setup.lora_r is not None:
        targets = setup.lora_targets or LORA_DEFAULT_TARGETS.get(shape.model_type, ())
        adapted = _targeted(shape.linears, targets)
        # the adapters, and a copy of a classifier head (peft's modules_to_save); the base stays whole and frozen
        trained = sum(setup.lora_r * (lin.inputs + lin.outputs) * lin.count for lin in adapted) + shape.head_parameters
        if setup.quantize:
            packed = sum(lin.parameters for lin in shape.linears)
            per = 1.0 if setup.quantize == "int8" else 0.5 + (1 / 64 if setup.double_quant else 4 / 64)
            frozen_bytes = int(packed * per) + (shape.parameters - packed) * 4  # peft keeps the rest in float32
            words.append(f"the base's block layers quantized to {setup.quantize} ({per:.2f} bytes a weight), the "
                         "rest in float32")
        else:
            frozen_bytes = shape.parameters * wb
        on = ", ".join(targets) or f"no layer (peft has no default for {shape.model_type}: name them in target_modules)"
        words.append(f"LoRA r = {setup.lora_r} on {on}: {trained:,} parameters trained (in float32)")
        trained_bytes: float = 4
    else:
        trained, frozen_bytes, trained_bytes = shape.parameters, 0, wb
    master = 0
    if setup.strategy == "deepspeed" and setup.mixed != "no" and setup.lora_r is None:
        trained_bytes, master = 2, 4  # DeepSpeed trains a 16-bit copy and keeps float32 master weights
    states, fixed = OPTIMIZERS.get(setup.optimizer, ADAMW)
    state_bytes = fixed if fixed is not None else (4 if master else trained_bytes)
    state_elements: float = states * trained
    low_rank = _low_rank(setup)
    if low_rank is not None:
        kind, rank = low_rank
        states, fixed = (2, 1) if "8bit" in setup.optimizer else (0, None) if "adafactor" in setup.optimizer else ADAMW
        state_bytes = fixed if fixed is not None else trained_bytes
        targets = setup.optimizer_targets
        projected = [lin for lin in shape.linears if any(t == "all-linear" or t in lin.name for t in targets)]
        full = sum(lin.parameters for lin in projected)
        # a projected m×n matrix keeps states of r × max(m, n) and a projector of r × min(m, n)
        low = sum(rank * (states * max(lin.inputs, lin.outputs) + min(lin.inputs, lin.outputs)) * lin.count
                  for lin in projected)
        state_elements = states * (trained - full) + low
        words.append(f"{kind} of rank {rank} on {len(projected)} kinds of layer")
    elif setup.optimizer not in OPTIMIZERS:
        words.append(f"the state of optimizer {setup.optimizer!r} is not known here: counted as AdamW's")
    elif setup.optimizer == "adafactor":
        state_elements = 2 * trained / max(shape.hidden, 1)  # factored: a row and a column a matrix
    return _Counts(trained, frozen_bytes, trained_bytes, state_elements, state_bytes, master, words)


@dataclass(frozen=True)
class Activations:
    """One GPU's micro-batch, in bytes: what the blocks keep for backward, what the rest of the model keeps (the
    embeddings, the last norm, the output layer's input), one block's more while backward works on it, autocast's
    16-bit copies of the weights, and the logits' peak."""

    blocks: int
    outside: int
    working: int
    weight_copies: int
    logits: int
    words: str

    @property
    def total(self) -> int:
        """Everything but the logits."""
        return self.blocks + self.outside + self.working + self.weight_copies


def activations(shape: ModelShape, setup: MemorySetup) -> Activations:
    """The activations of one GPU's micro-batch (see the module's docstring)."""
    mode = _mode(setup)
    c_h, c_i, c_rest = ACTIVATION_BYTES[shape.style][mode]
    act = 4 if mode == "fp32" else 2
    h, inner, b = shape.hidden, shape.intermediate, setup.batch
    source = b * setup.tokens
    # grouped-query attention keeps smaller keys and values than the c_h per hidden size assumes
    gqa = 2 * act * (shape.heads - shape.kv_heads) * shape.head_dim
    block = c_h * h + c_i * inner - gqa + (SCORE_BYTES * shape.heads * setup.tokens if shape.eager_attention else 0)
    if shape.decoder_blocks:
        target = b * (setup.target_tokens or setup.tokens)
        d_h, d_i = DECODER_BLOCK[mode]
        decoder_block = d_h * h + d_i * inner + SCORE_BYTES * shape.heads * (setup.target_tokens + setup.tokens)
        per_block = [(shape.blocks - shape.decoder_blocks, source, block), (shape.decoder_blocks, target, decoder_block)]
    else:
        target, per_block = source, [(shape.blocks, source, block)]
    one_block = max(tokens * size for _, tokens, size in per_block)
    if setup.checkpointing:  # each block's input, and one block recomputed in backward
        residual = 2 if mode == "half" else 4
        kept = sum(count * tokens * h * residual for count, tokens, _ in per_block) + one_block
        how = "checkpointed: each block's input and one block recomputed"
    else:
        kept = sum(count * tokens * size for count, tokens, size in per_block)
        how = "every block's kept for backward"
    if setup.lora_r is not None:
        kept = kept * LORA_ACTIVATIONS
    lm_head = setup.task in ("causal-lm", "seq2seq")
    copies = 0
    if mode == "mixed" and setup.strategy not in ("fsdp", "deepspeed"):
        copies = 2 * (sum(lin.parameters for lin in shape.linears) + shape.output_weights)
    tokens_words = f"{setup.tokens} → {setup.target_tokens}" if shape.decoder_blocks else str(setup.tokens)
    precision = {"fp32": "float32", "mixed": f"{setup.mixed} autocast over float32 weights (with 16-bit copies of "
                 "them)", "half": "16-bit"}[mode]
    words = (f"activations: batch {b} × {tokens_words} tokens, {shape.blocks} blocks of hidden size {h} "
             f"(intermediate {inner}), {precision}, {how}" + ("; attention scores kept" if shape.eager_attention else ""))
    return Activations(blocks=int(kept), outside=int(source * c_rest * h), working=int(one_block), weight_copies=copies,
                       logits=LOGIT_BYTES * target * shape.vocab if lm_head else 0, words=words)


def _shards(setup: MemorySetup) -> tuple[int, int, int, bool]:
    """What a strategy divides weights, gradients and optimizer state by (the processes a shard spans), and whether
    it also keeps the whole weights gathered (FSDP's shard_grad_op, as ZeRO-2 keeps them)."""
    world = max(setup.world, 1)
    if setup.strategy == "fsdp":
        group = setup.per_machine if setup.fsdp_sharding.startswith("hybrid") else world
        if setup.fsdp_sharding == "no_shard":
            return 1, 1, 1, False
        return group, group, group, setup.fsdp_sharding in ("shard_grad_op", "hybrid_shard_zero2")
    if setup.strategy == "deepspeed":
        stage = setup.zero_stage
        return (world if stage >= 3 else 1), (world if stage >= 2 else 1), (world if stage >= 1 else 1), False
    return 1, 1, 1, False


def estimate_memory(shape: ModelShape, setup: MemorySetup) -> MemoryEstimate:
    """Each GPU's memory for `setup` on a model of `shape` (see the module's docstring for the model)."""
    counts = _counts(shape, setup)
    w_shard, g_shard, o_shard, whole = _shards(setup)
    weights = (counts.frozen_bytes + counts.trained * counts.trained_bytes) / w_shard
    gradients = counts.trained * counts.trained_bytes / g_shard
    if setup.optimizer in FUSED_INTO_BACKWARD:
        gradients = 0
    elif setup.optimizer.endswith("_layerwise"):  # each parameter steps as soon as its gradient is ready
        gradients = max((lin.inputs * lin.outputs for lin in shape.linears), default=0) * counts.trained_bytes
    optimizer = (counts.state_elements * counts.state_bytes + counts.trained * counts.master_bytes) / o_shard
    compute = 2 if setup.mixed != "no" or _weight_bytes(setup) == 2 else 4  # the dtype FSDP and ZeRO-3 gather in
    outside = max(shape.parameters - shape.blocks * shape.block_parameters, 0)  # embeddings, last norm, output layer
    gathered = (outside + 3 * shape.block_parameters) * compute  # two blocks' weights, one block's gradients
    words = [f"{shape.model_type}, {shape.parameters:,} parameters, weights in {setup.weight_dtype}", *counts.words]
    buffers, exact_buffers = 0, False
    if setup.strategy == "fsdp":
        weights += shape.parameters * compute if whole else 0  # shard_grad_op keeps them gathered until backward
        if setup.fsdp_offload:
            weights, gradients, optimizer = 0, 0, 0
        buffers = gathered
        words.append(f"fsdp {setup.fsdp_sharding} over {w_shard} of {setup.world} processes"
                     + (", parameters, gradients and optimizer state offloaded to the CPU" if setup.fsdp_offload else "")
                     + "; two blocks and the embeddings gathered at a time")
    elif setup.strategy == "deepspeed":
        if setup.offload_optimizer:
            optimizer = 0
        if setup.offload_param and setup.zero_stage >= 3:
            weights = 0
        buffers = 2 * shape.hidden * shape.hidden * 2 + (gathered if setup.zero_stage >= 3 else 0)  # reduce buckets
        words.append(f"deepspeed ZeRO-{setup.zero_stage} over {setup.world} processes"
                     + (", optimizer state offloaded" if setup.offload_optimizer else "")
                     + (", parameters offloaded" if setup.offload_param and setup.zero_stage >= 3 else ""))
    elif setup.strategy == "ddp" and setup.world > 1:
        buffers, exact_buffers = int(gradients), True
        words.append(f"ddp over {setup.world} processes: a whole copy on each GPU, and its gradient buckets")
    else:
        words.append(f"{setup.strategy}: one process, a whole copy")
    step_temporary = counts.trained * counts.state_bytes if setup.optimizer in FOREACH else 0
    found = activations(shape, setup)
    words.append(found.words)
    acts, logits = found.total, found.logits
    accumulating = setup.accumulation > 1 or setup.strategy == "deepspeed"
    dynamic = gradients + acts + logits if accumulating else max(gradients + step_temporary, acts + logits)
    peak = int(weights + optimizer + buffers + dynamic)
    runtime = int(CUDA_CONTEXT + (NCCL_BUFFERS if setup.world > 1 else 0) + ALLOCATOR_SLACK * peak)
    exact, guessed = (buffers, 0) if exact_buffers else (0, buffers)
    margin = int(COUNT_ERROR * (weights + optimizer + gradients + exact) + ACTIVATION_ERROR * (acts + logits)
                 + BUFFER_ERROR * (guessed + runtime))
    words.append("peak: weights + optimizer state + buffers + "
                 + ("gradients + activations (gradients are kept across micro-batches)" if accumulating
                    else "the larger of gradients and activations (gradients are freed after each step)"))
    return MemoryEstimate(parameters=shape.parameters, trained=counts.trained, weights=int(weights),
                          gradients=int(gradients), optimizer=int(optimizer), activations=acts, logits=logits,
                          buffers=int(buffers), peak=peak, runtime=runtime, margin=margin, accumulating=accumulating,
                          words=tuple(words))
