"""An accelerate config (YAML or JSON, as `accelerate config` writes it) → the profile's
[distributed] and [hardware] tables (and the [training] keys DeepSpeed's fields must agree with),
plus one Problem for every field that could not be mapped (never dropped silently) and a note for
every renamed or defaulted one. PyYAML is imported only to read a file, when one is read."""

from __future__ import annotations

import json
import reprlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .accelerate_canonical import (
    as_bool,
    as_mapping,
    canonical_config,
    canonical_deepspeed,
    canonical_fsdp,
    fsdp_key_as_read,
    fsdp_prefixed,
    gpu_id_list,
)
from .accelerate_names import (
    CPU_RANKS_MARK,
    DS_DEFAULTS,
    DS_PLAIN,
    EMPTY,
    FSDP_ALIASES,
    FSDP_KNOWN,
    FSDP_PLAIN,
    NO_PROFILE_KEY,
    PREFETCH,
    SHARDING,
    STATE_DICT,
    TOP_DEFAULTS,
    WRAP,
)
from .problems import Problem
from .schema import DEEPSPEED_KEYS, FSDP_KEYS
from .shape import check_value


@dataclass
class ImportResult:
    """The [distributed] table (whole) and the [hardware] and [training] keys an accelerate config maps to.

    `hardware_remove`: [hardware] keys to take out of a profile merged into (gpu_ids "all": no
    GPU selection). `training`: the TrainingArguments DeepSpeed's plugin fields must agree with.
    `problems`: errors (nothing usable), warnings (fields not mapped: the profile would run
    differently), notes (renamed, defaulted or ignored fields)."""

    distributed: dict[str, Any] = field(default_factory=dict)
    hardware: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    hardware_remove: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def tables(self) -> dict[str, Any]:
        tables = {"hardware": dict(self.hardware), "distributed": dict(self.distributed)}
        if self.training:
            tables["training"] = dict(self.training)
        return tables

    def merge_into(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """A profile's data with [distributed] replaced and the [hardware] and [training] keys set (a new dict)."""
        merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
        old_hardware = merged.get("hardware")
        hardware: dict[str, Any] = old_hardware if isinstance(old_hardware, dict) else {}
        for key in self.hardware_remove:
            hardware.pop(key, None)
        hardware.update(self.hardware)
        merged["hardware"] = hardware
        merged["distributed"] = dict(self.distributed)
        if self.training:
            old_training = merged.get("training")
            training: dict[str, Any] = old_training if isinstance(old_training, dict) else {}
            merged["training"] = {**training, **self.training}
        return merged


DISTRIBUTED_TYPES = {"NO": "single", "MULTI_GPU": "ddp", "MULTI_CPU": "ddp", "FSDP": "fsdp", "DEEPSPEED": "deepspeed"}


def import_accelerate_config(config: Any, file: str, base_dir: Path | None = None,
                             comments: Sequence[str] = ()) -> ImportResult:
    """An accelerate config (the parsed YAML or JSON) → profile tables and a word on every field.

    `base_dir`: where a relative deepspeed_config_file is looked for (to read its precision).
    `comments`: the file's comment lines (export marks a config for CPU ranks in one)."""
    result = ImportResult()
    problems = result.problems

    def note(key: str, message: str, fix: str | None = None, severity: str = "note") -> None:
        problems.append(Problem(file, key, message, fix, severity))  # type: ignore[arg-type]

    if not isinstance(config, dict):
        note("", "is not an accelerate config (expected a mapping of keys)", "give the YAML that "
             "`accelerate config` writes", "error")
        return result
    cfg = {str(k): v for k, v in config.items()}
    env = str(cfg.get("compute_environment", "LOCAL_MACHINE"))
    if env != "LOCAL_MACHINE":
        note("compute_environment", f"{env}: only LOCAL_MACHINE configs can be imported (tuitrain launches "
             "on this machine or a cluster of them)", "write a LOCAL_MACHINE config with `accelerate config`", "error")
        return result
    kind = str(cfg.get("distributed_type", "")).upper()
    if kind not in DISTRIBUTED_TYPES:
        what = f"{kind!r} is not one of tuitrain's strategies" if kind else "missing"
        note("distributed_type", what, "tuitrain imports NO, MULTI_GPU, MULTI_CPU, FSDP and DEEPSPEED configs", "error")
        return result
    canon = canonical_config(cfg)
    dist: dict[str, Any] = {"strategy": DISTRIBUTED_TYPES[kind]}
    hardware: dict[str, Any] = {}
    done = {"compute_environment", "distributed_type"}

    # -- processes and machines
    total = canon["num_processes"]
    machines = canon["num_machines"] if _whole(canon["num_machines"]) and canon["num_machines"] >= 1 else 1
    done |= {"num_processes", "num_machines"}
    if not _whole(canon["num_machines"]) or canon["num_machines"] != machines:
        note("num_machines", f"{canon['num_machines']!r} is not a number of machines (1 or more); imported as 1",
             "set distributed.num_machines", "warning")
    if not _whole(total) or total < 1:
        note("num_processes", f"{total!r}: accelerate leaves it to the command line (e.g. under SLURM); "
             "tuitrain needs the number", "set distributed.num_processes (per machine) in the profile", "warning")
        total = machines
    if total % machines:
        note("num_processes", f"{total} processes do not split evenly over {machines} machines; "
             f"tuitrain runs num_processes on each machine, so this imports {total // machines or 1} per machine",
             "check distributed.num_processes", "warning")
    dist["num_processes"] = max(total // machines, 1)
    if kind == "NO" and total > 1:
        note("num_processes", f"{total} processes with distributed_type NO: accelerate runs one", None, "warning")
        dist["num_processes"] = 1
    if machines > 1:
        dist["num_machines"] = machines
    for key in ("machine_rank", "main_process_ip", "main_process_port"):
        done.add(key)
        if canon[key] not in (None, TOP_DEFAULTS[key]):
            dist[key] = canon[key]
    done |= {"rdzv_backend", "same_network", "downcast_bf16"}
    if canon["rdzv_backend"] in ("static", "c10d"):
        dist["rdzv_backend"] = canon["rdzv_backend"]
    else:
        note("rdzv_backend", f"{canon['rdzv_backend']!r} is not one of static, c10d", "set distributed.rdzv_backend",
             "warning")
    dist["same_network"] = canon["same_network"]
    if "same_network" not in cfg:
        note("same_network", "absent: accelerate reads it as false (rendezvous through main_process_ip:port as "
             "an endpoint); written as distributed.same_network = false")
    if canon["downcast_bf16"] is not False:
        dist["downcast_bf16"] = canon["downcast_bf16"]

    # -- device and precision
    done |= {"use_cpu", "gpu_ids", "mixed_precision"}
    if not isinstance(canon["use_cpu"], bool):
        note("use_cpu", f"= {_shown(canon['use_cpu'])} is not true or false; read as false", "set "
             'hardware.accelerator = "cpu" for CPU ranks', "warning")
    if canon["use_cpu"] is True or kind == "MULTI_CPU":
        hardware["accelerator"] = "cpu"
        if kind == "MULTI_CPU":
            note("distributed_type", "MULTI_CPU: accelerate starts one process for it without mpirun; tuitrain "
                 "runs the CPU ranks as real gloo processes (strategy ddp, accelerator cpu)")
    elif kind == "MULTI_GPU" and any(CPU_RANKS_MARK in line for line in comments):
        hardware["accelerator"] = "cpu"
        note("distributed_type", "MULTI_GPU from `tuitrain profile export-accelerate` for CPU ranks (its header "
             "says so): imported as hardware.accelerator = \"cpu\"")
    elif kind in ("MULTI_GPU", "FSDP", "DEEPSPEED"):
        hardware["accelerator"] = "cuda"
        if kind == "MULTI_GPU":
            note("distributed_type", "MULTI_GPU: imported as hardware.accelerator = \"cuda\"; if this config "
                 "starts CPU ranks (MULTI_GPU with CUDA_VISIBLE_DEVICES empty, as tuitrain runs them), set "
                 "hardware.accelerator = \"cpu\"")
    else:
        hardware["accelerator"] = "auto"
    ids = gpu_id_list(cfg.get("gpu_ids", "all"))
    if ids == "all":
        result.hardware_remove.append("gpus")
    elif ids is None:
        result.hardware_remove.append("gpus")
        note("gpu_ids", f"= {_shown(cfg.get('gpu_ids'))} is not a list of GPU numbers or UUIDs; imported as all "
             "GPUs", "set hardware.gpus, e.g. gpus = [0, 1]", "warning")
    else:
        hardware["gpus"] = ids
        note("gpu_ids", f"{canon['gpu_ids']} are CUDA device numbers; hardware.gpus are physical (NVML) "
             "indices, the same when CUDA_DEVICE_ORDER=PCI_BUS_ID (tuitrain's default) and no "
             "CUDA_VISIBLE_DEVICES hides a GPU", "check them against `tuitrain gpus`")
    mixed = cfg.get("mixed_precision")
    if mixed is None and kind == "DEEPSPEED" and canon["deepspeed_config"].get("deepspeed_config_file"):
        found = _precision_from_json(canon["deepspeed_config"]["deepspeed_config_file"], base_dir)
        if found:
            hardware["mixed_precision"] = found
        else:
            note("mixed_precision", "absent: the DeepSpeed JSON decides (\"auto\" there follows "
                 "hardware.mixed_precision); hardware.mixed_precision left as it was")
    elif canon["mixed_precision"] in ("no", "fp16", "bf16"):
        hardware["mixed_precision"] = canon["mixed_precision"]
    else:
        note("mixed_precision", f"{canon['mixed_precision']!r} is not one of no, fp16, bf16", "set "
             "hardware.mixed_precision", "warning")

    # -- strategy tables
    for section in ("fsdp_config", "deepspeed_config"):
        if cfg.get(section) is not None and not isinstance(cfg[section], Mapping):
            note(section, f"= {_shown(cfg[section])} is not a mapping of keys: nothing in it "
                 "could be imported", f"write {section} as `key: value` lines under it", "warning")
    if kind == "FSDP":
        done.add("fsdp_config")
        dist["fsdp"] = _import_fsdp(as_mapping(cfg.get("fsdp_config")), note)
    elif cfg.get("fsdp_config"):
        done.add("fsdp_config")
        note("fsdp_config", f"ignored by accelerate with distributed_type {kind}", None, "note")
    if kind == "DEEPSPEED":
        done.add("deepspeed_config")
        dist["deepspeed"] = _import_deepspeed(as_mapping(cfg.get("deepspeed_config")), note, machines, base_dir)
    elif cfg.get("deepspeed_config"):
        done.add("deepspeed_config")
        note("deepspeed_config", f"ignored by accelerate with distributed_type {kind}", None, "note")

    # -- everything else: at its default it says nothing; otherwise it could not be mapped
    quiet = []
    for key, value in cfg.items():
        if key in done:
            continue
        default = TOP_DEFAULTS.get(key)
        if value in EMPTY or value == default or as_bool(value) == default:
            quiet.append(key)
            continue
        why = NO_PROFILE_KEY.get(key, "tuitrain has no key for it")
        note(key, f"= {_shown(value)} could not be mapped: {why}", None, "warning")
    if quiet:
        note("", "at accelerate's defaults, nothing to carry over: " + ", ".join(sorted(quiet)))
    result.distributed = _checked(dist, "distributed", note)
    result.hardware = _checked(hardware, "hardware", note)
    result.training = _training_from_deepspeed(result.distributed.get("deepspeed") or {}, note)
    return result


# DeepSpeed plugin field -> the TrainingArguments key transformers checks it against at start
DS_TRAINING_PAIRS = {"gradient_accumulation_steps": "gradient_accumulation_steps", "gradient_clipping": "max_grad_norm"}


def _training_from_deepspeed(ds: Mapping[str, Any], note: Any) -> dict[str, Any]:
    """[training] values that agree with the imported DeepSpeed fields: transformers' DeepSpeed
    integration stops a run whose TrainingArguments differ from them."""
    training: dict[str, Any] = {}
    for ds_key, train_key in DS_TRAINING_PAIRS.items():
        value = ds.get(ds_key)
        if value is None:
            continue
        training[train_key] = value
        note(f"deepspeed_config.{ds_key}", f"{_shown(value)}: also written as training.{train_key} = {_shown(value)} "
             "(transformers stops a run where the two differ)")
    return training


# profile key -> the accelerate key it came from, where the names differ
_SOURCES = {
    "distributed.strategy": "distributed_type",
    "hardware.accelerator": "distributed_type",
    "hardware.gpus": "gpu_ids",
    "hardware.mixed_precision": "mixed_precision",
    **{f"distributed.fsdp.{ours}": f"fsdp_config.{acc}" for acc, ours in FSDP_PLAIN.items()},
    **{f"distributed.fsdp.{leaf}": f"fsdp_config.fsdp_{leaf}" for leaf in (
        "sharding_strategy", "auto_wrap_policy", "transformer_layer_cls_to_wrap", "backward_prefetch",
        "state_dict_type")},
    **{f"distributed.deepspeed.{ours}": f"deepspeed_config.{acc}" for acc, ours in DS_PLAIN.items()},
}


def _broken_text(key: str, value: Any) -> list[Problem]:
    """A string with lone UTF-16 surrogates (a YAML "\\ud83d\\ude00" escape pair) is no text a file can hold."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return [Problem("imported", key, "not valid text (a character escaped as two \\u halves?)",
                                "write the character itself, or as \\UXXXXXXXX")]
    return []


def _checked(table: dict[str, Any], prefix: str, note: Any) -> dict[str, Any]:
    """`table` without the values a profile cannot hold (wrong type, not a choice, out of range),
    each named as a warning under the accelerate key it came from: an import never copies through
    a value that would break the profile, nor drops one silently."""
    out: dict[str, Any] = {}
    for leaf, value in table.items():
        key = f"{prefix}.{leaf}"
        if key in ("distributed.fsdp", "distributed.deepspeed") and isinstance(value, dict):
            out[leaf] = _checked(value, key, note)
            continue
        found = check_value("imported", key, value) or _broken_text(key, value)
        if not found:
            out[leaf] = value
            continue
        source = _SOURCES.get(key, key.removeprefix("distributed.").removeprefix("hardware."))
        note(source, f"= {_shown(value)} could not be mapped: {found[0].message}",
             f"set {key} in the profile" + (f" ({found[0].fix})" if found[0].fix else ""), "warning")
    return out


_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxlevel = 60, 60, 6, 6, 3


def _shown(value: Any) -> str:
    """A value as a message shows it: short, whatever its size (YAML aliases can make it huge)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        text = json.dumps(value)
        return text if len(text) <= 80 else text[:76] + '..."'
    return _SHORT.repr(value)


def _reverse(table: Mapping[str, str], value: Any) -> str | None:
    """The key of `table` whose value is `value` (None for anything else, unhashable values too)."""
    return next((k for k, v in table.items() if isinstance(value, str) and v == value), None)



def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_path(path: Any, base_dir: Path | None, note: Any) -> Any:
    """deepspeed_config_file as the profile should hold it: a relative path is relative to the
    accelerate config's folder, and a profile's to its own folder, so it is written out in full."""
    if not isinstance(path, str) or base_dir is None or Path(path).expanduser().is_absolute():
        return path  # not a path at all: the schema check names it
    full = str((base_dir / path).resolve())
    note("deepspeed_config.deepspeed_config_file", f"{path} is relative to the accelerate config's folder: "
         f"written as {full}")
    return full


def _precision_from_json(path: Any, base_dir: Path | None) -> str | None:
    if not isinstance(path, str):
        return None
    full = Path(path).expanduser()
    if not full.is_absolute() and base_dir is not None:
        full = base_dir / full
    try:
        loaded = json.loads(full.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for precision in ("bf16", "fp16"):
        section = loaded.get(precision) if isinstance(loaded, dict) else None
        if isinstance(section, dict) and section.get("enabled") is True:
            return precision
    return None


def _import_fsdp(raw: Mapping[str, Any], note: Any) -> dict[str, Any]:
    canon = canonical_fsdp(raw)
    for key, value in raw.items():
        if fsdp_prefixed(key) in FSDP_ALIASES:
            note(f"fsdp_config.{key}", f"an old or foreign name that accelerate 1.15 does not read (a config "
                 f"with it runs without the setting); read as {fsdp_key_as_read(key)}, and written under that "
                 "name on export")
        full = fsdp_key_as_read(key)
        if full in FSDP_KNOWN and full not in canon:
            note(f"fsdp_config.{key}", f"= {_shown(value)} not imported: accelerate does not use it with "
                 f"fsdp_version {_shown(canon['fsdp_version'])} and auto wrap policy "
                 f"{_shown(canon['fsdp_auto_wrap_policy'])}")
    table: dict[str, Any] = {}
    for acc, ours in FSDP_PLAIN.items():
        if acc in canon:
            table[ours] = canon[acc]
    version = canon["fsdp_version"]
    if version not in (1, 2):
        note("fsdp_config.fsdp_version", f"{version!r} is not 1 or 2", "set distributed.fsdp.version", "warning")
    if version == 2:
        table["sharding_strategy"] = "full_shard" if canon["fsdp_reshard_after_forward"] else "shard_grad_op"
    elif isinstance(canon["fsdp_sharding_strategy"], str) and canon["fsdp_sharding_strategy"] in SHARDING:
        table["sharding_strategy"] = canon["fsdp_sharding_strategy"].lower()
    else:
        note("fsdp_config.fsdp_sharding_strategy", f"{canon['fsdp_sharding_strategy']!r} is not a sharding strategy",
             "set distributed.fsdp.sharding_strategy", "warning")
    policy = _reverse(WRAP, canon["fsdp_auto_wrap_policy"])
    if policy is None:
        note("fsdp_config.fsdp_auto_wrap_policy", f"{canon['fsdp_auto_wrap_policy']!r} is not a wrap policy",
             "set distributed.fsdp.auto_wrap_policy", "warning")
    else:
        table["auto_wrap_policy"] = policy
    if canon.get("fsdp_transformer_layer_cls_to_wrap"):
        table["transformer_layer_cls_to_wrap"] = canon["fsdp_transformer_layer_cls_to_wrap"]
    if "fsdp_backward_prefetch" in canon:
        prefetch = _reverse(PREFETCH, canon["fsdp_backward_prefetch"])
        if prefetch is None:
            note("fsdp_config.fsdp_backward_prefetch", f"{canon['fsdp_backward_prefetch']!r} is not one of "
                 f"{', '.join(PREFETCH.values())}; not imported", "set distributed.fsdp.backward_prefetch", "warning")
        else:
            table["backward_prefetch"] = prefetch
    state = _reverse(STATE_DICT, canon["fsdp_state_dict_type"])
    if state:
        table["state_dict_type"] = state
    else:
        note("fsdp_config.fsdp_state_dict_type", f"{canon['fsdp_state_dict_type']!r} is not one of "
             f"{', '.join(STATE_DICT.values())}; not imported", "set distributed.fsdp.state_dict_type", "warning")
    for key, value in canon["unknown"].items():
        note(f"fsdp_config.{key}", f"= {_shown(value)} could not be mapped: not among "
             "[distributed.fsdp]'s keys", "check whether accelerate 1.15 reads it at all", "warning")
    return {k: table[k] for k in FSDP_KEYS if k in table}


def _import_deepspeed(raw: Mapping[str, Any], note: Any, machines: int = 1,
                      base_dir: Path | None = None) -> dict[str, Any]:
    canon = canonical_deepspeed(raw)
    for key, value in canon["launcher"].items():
        if key == "deepspeed_multinode_launcher" and (value == "standard" or machines == 1):
            continue  # what tuitrain does anyway / nothing to launch across machines
        note(f"deepspeed_config.{key}", f"= {_shown(value)} could not be mapped: tuitrain starts "
             "every machine itself (accelerate's \"standard\" launcher: torchrun on each machine), not through "
             "DeepSpeed's pdsh / MPI / SLURM runner", "run `tuitrain run PROFILE` on each machine with its "
             "distributed.machine_rank", "warning")
    table: dict[str, Any] = {}
    if canon.get("deepspeed_config_file"):
        table["config_file"] = _json_path(canon["deepspeed_config_file"], base_dir, note)
        if canon["zero3_init_flag"] is not None:
            table["zero3_init"] = canon["zero3_init_flag"]
        ignored = [k for k in raw if k in DS_DEFAULTS]
        if ignored:
            note("deepspeed_config", f"{', '.join(ignored)} next to deepspeed_config_file: accelerate refuses "
                 "that combination; not imported", "set them in the DeepSpeed JSON", "warning")
    else:
        for acc, ours in DS_PLAIN.items():
            if acc == "deepspeed_config_file":
                continue
            value = canon.get(acc)
            if value is None or value == "auto":
                continue
            table[ours] = value
        if not canon["zero3_save_16bit_model"] and canon["zero_stage"] != 3:
            table.pop("zero3_save_16bit_model", None)
        if table.get("zero3_init") is True and canon["zero_stage"] != 3:
            note("deepspeed_config.zero3_init_flag", f"true with zero_stage {canon['zero_stage']}: accelerate turns "
                 "it off (it only acts at stage 3); imported as written")
    table = {k: table[k] for k in DEEPSPEED_KEYS if k in table}
    for key, value in canon["unknown"].items():
        note(f"deepspeed_config.{key}", f"= {_shown(value)} could not be mapped: not among "
             "[distributed.deepspeed]'s keys", "set it in a DeepSpeed JSON (distributed.deepspeed.config_file)",
             "warning")
    return table



# ---------------------------------------------------------------------------------- files


def import_accelerate_file(path: Path) -> ImportResult:
    """Read an accelerate config file and import it (its comments included); OSError / ValueError
    when it cannot be read as YAML or JSON."""
    text = path.read_text(encoding="utf-8")
    comments = [line.strip().lstrip("#").strip() for line in text.splitlines() if line.strip().startswith("#")]
    return import_accelerate_config(parse_config_text(text, path.suffix), str(path), base_dir=path.parent,
                                    comments=comments)


def parse_config_text(text: str, suffix: str = ".yaml") -> Any:
    """The parsed YAML (or, for suffix ".json", JSON) of an accelerate config; ValueError if not."""
    import yaml

    if suffix == ".json":
        return json.loads(text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {exc}") from None
