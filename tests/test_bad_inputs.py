"""A corpus of bad inputs a real user makes (issue 27), each run through `validate`, `plan` and, where validate
accepts it, a short `run`.

Each case is one row of `CASES`: its kind (sections, types, values, files, data contents, scripts, machines, CLI
arguments), how to make it (a profile written into a fresh folder, files beside it, the command line's extra
arguments), its class (REFUSED: validate refuses it; ACCEPTED: validate, plan and a short run accept it) and, for a
refusal, the key and words its first line must hold. validate and plan run in this process (cheap: no launch);
only the accepted cases run, for max_steps 2. The suite fails on any traceback, any refusal whose first line names
no file (or argument) and key, any line of plan's that validate did not say, and any case validate accepts that a
run refuses or fails (a rank failing on its data contents included). Add a row for each new kind of mistake.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from conftest import cli, only_run, record
from tuitrain.cli import main as tuitrain_main
from tuitrain.profile import builtin_profile_path

DEMO = builtin_profile_path().read_text(encoding="utf-8")
KINDS = ("sections", "types", "values", "files", "data contents", "scripts", "machines", "CLI arguments")
REFUSED, ACCEPTED = "refused by validate", "accepted"
SHORT_RUN = ("--set", "training.max_steps=2", "--set", "training.eval_steps=2", "--set", "training.save_steps=2",
             "--set", "training.logging_steps=1")  # evaluates once: a metric's failure shows


def demo(*edits: tuple[str, str]) -> str:
    """The demo profile's text with each (old, new) replaced once (each old must be there)."""
    text = DEMO
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def without_config(text: str) -> str:
    """A profile with its [model.config] table removed (a pretrained model named instead)."""
    start, end = text.index("[model.config]"), text.index("[model.train_tokenizer]")
    return text[:start] + text[end:]


def from_files(train: str, validation: str | None = None, **more: str) -> str:
    """The demo reading data files in place of its generated set."""
    lines = f'train_file = "{train}"' + (f'\nvalidation_file = "{validation}"' if validation else "")
    lines += "".join(f"\n{key} = {json.dumps(value)}" for key, value in more.items())
    text = demo(('generate = "sentiment-words"   # built-in generated data set', lines))
    return text if validation else text.replace('eval_strategy = "steps"', 'eval_strategy = "no"', 1)


def jsonl_rows(count: int, broken: int) -> str:
    """JSON Lines rows, line `broken` (1-based, as an editor numbers it) missing a quote."""
    lines = [json.dumps({"text": f"good film {i}", "label": i % 2}) for i in range(count)]
    lines[broken - 1] = '{"text": "broken, "label": 1}'
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Bad:
    """One bad input: `profile` is written as p.toml (None: the demo by name), `files` beside it; `args` follow
    the profile on the command line ("{dir}" is the folder); the first line names `key` and says `says`."""

    kind: str
    name: str
    key: str
    says: str
    profile: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    ref: Callable[[Path], str] | None = None  # the profile argument itself (default: p.toml's path, or demo)
    encoding: str = "utf-8"  # how `files` are written
    outcome: str = REFUSED
    defect: str = ""  # a known defect (validate accepts what run refuses), in a file this corpus does not own
    nvml: str | None = None  # a recorded NVML table (tests/fixtures/nvml) the machine's GPUs are read from


def put(section: str, *lines: str) -> str:
    """The demo with `lines` added at the top of [section] (a later duplicate key is a TOML error: replace instead)."""
    at = DEMO.index("\n", DEMO.index(f"[{section}]")) + 1
    return DEMO[:at] + "".join(line + "\n" for line in lines) + DEMO[at:]


def swap(old: str, new: str) -> str:
    return demo((old, new))


SCRIPT = '[run]\nname = "mine"\n\n[script]\n{body}\n\n[hardware]\naccelerator = "cpu"\n'
TRAIN_PY = "print('hello')\n"


def script(body: str) -> str:
    return SCRIPT.format(body=body)


def machines(*tables: str, port: bool = True) -> str:
    """The demo over listed machines (nothing is reached: validate checks the profile's own words)."""
    text = swap('strategy = "single"\nnum_processes = 1',
                'strategy = "ddp"\nnum_processes = 1\nmain_process_ip = "10.0.0.1"'
                + ('\nmain_process_port = 29555' if port else ""))
    return text + "".join(f"\n[[distributed.machines]]\n{table}\n" for table in tables)


CSV_OK = "text,label\n" + "".join(f"sentence {i} {'good' if i % 2 else 'bad'},{i % 2}\n" for i in range(40))

CASES = [
    Bad("sections", "a misspelt section", "traning", "unknown section [traning]",
        profile=DEMO.replace("[training]", "[traning]")),
    Bad("types", "a quoted number in [model.config]", "model.config.hidden_size",
        'expected a whole number (int), got the string "32"; write it without quotes: hidden_size = 32',
        profile=demo(("hidden_size = 32", 'hidden_size = "32"'))),
    Bad("types", "a whole number where the config takes only a float", "model.config.layer_norm_eps",
        "expected a float, got the whole number 0", profile=demo(("hidden_size = 32", "hidden_size = 32\nlayer_norm_eps = 0"))),
    Bad("types", "a number where the config takes a boolean", "model.config.is_decoder",
        "expected true or false (bool), got the integer 1",
        profile=demo(("hidden_size = 32", "hidden_size = 32\nis_decoder = 1"))),
    Bad("CLI arguments", "--set of a word where the config takes a number", "model.config.hidden_size",
        'expected a whole number (int), got the string "abc" (from --set)', args=("--set", "model.config.hidden_size=abc")),
    Bad("values", "a negative learning rate", "training.learning_rate", "must be greater than 0",
        profile=demo(("learning_rate = 3e-3", "learning_rate = -1"))),
    Bad("values", "a model type transformers does not have", "model.config.model_type", "did you mean 'bert'?",
        profile=demo(('model_type = "bert"', 'model_type = "bret"'))),
    Bad("values", "task = classification for sentence pairs", "model.task",
        "did you mean 'sequence-classification'? (the data is sentence pairs with labels (data.text_pair_column))",
        profile=from_files("pairs.csv", text_pair_column="text2").replace(
            'task = "sequence-classification"', 'task = "classification"'),
        files={"pairs.csv": "text,text2,label\na cat,a dog,0\nthe sun,the sun,1\n"}),
    Bad("files", "a data file as the model", "model.name_or_path", "train.csv is a file, not a model folder",
        profile=without_config(demo(("num_labels = 2", 'num_labels = 2\nname_or_path = "train.csv"'))),
        files={"train.csv": "text,label\ngood,1\n"}),
    Bad("files", "a file as the tokenizer", "model.tokenizer", "vocab.txt is a file, not a tokenizer folder",
        profile=demo(("[model.train_tokenizer]   # a WordLevel tokenizer trained on the training text\nvocab_size = 128\n",
                      ""), ("num_labels = 2", 'num_labels = 2\ntokenizer = "vocab.txt"')),
        files={"vocab.txt": "[PAD]\n[UNK]\n"}),
    Bad("files", "a folder as the profile", "", "is a folder, not a profile; profiles in it: p.toml",
        profile=DEMO, ref=lambda folder: "."),
    Bad("data contents", "a JSON Lines file with a broken line 18", "data.train_file",
        "train.jsonl: line 18 is not JSON", profile=from_files("train.jsonl"),
        files={"train.jsonl": jsonl_rows(30, broken=18)}),
    Bad("data contents", "a CSV separated by semicolons", "data.train_file",
        "semi.csv is separated by semicolons (;), not commas", profile=from_files("semi.csv"),
        files={"semi.csv": "text;label\ngood film;1\nbad film;0\n"}),
    Bad("data contents", "string labels", "data.label_column", '"positive" (row 1)',
        profile=from_files("words.csv"), files={"words.csv": "text,label\ngood film,positive\n"}),

    # sections
    Bad("sections", "an unknown top-level section", "lora", "unknown section [lora]",
        profile=DEMO + "\n[lora]\nr = 8\n"),
    Bad("sections", "a section written as a plain value", "hardware", "",
        profile='hardware = "cpu"\n' + swap('[hardware]\naccelerator = "cpu"\n', "")),
    Bad("sections", "a section declared twice", "", "", profile=DEMO + "\n[training]\nmax_steps = 3\n"),
    Bad("sections", "a TOML syntax error", "", "", profile=swap('name = "demo"', 'name = "demo')),
    Bad("sections", "[script] beside tuitrain's engine sections", "model", "",
        profile=DEMO + '\n[script]\npath = "train.py"\n', files={"train.py": TRAIN_PY}),
    Bad("sections", "an unknown key in [run]", "run.nam", "", profile=swap('name = "demo"', 'nam = "demo"')),
    Bad("sections", "an unknown key in [data]", "data.train_files", "", profile=put("data", 'train_files = "x.csv"')),
    Bad("sections", "accelerate's gpu_ids in [hardware]", "hardware.gpu_ids", "",
        profile=put("hardware", "gpu_ids = [0]")),
    Bad("sections", "torchrun's nproc_per_node in [distributed]", "distributed.nproc_per_node", "",
        profile=put("distributed", "nproc_per_node = 2")),
    Bad("sections", "an unknown key in [metrics]", "metrics.name", "", profile=put("metrics", 'name = "accuracy"')),
    Bad("sections", "an unknown key in [logging]", "logging.level", "", profile=put("logging", 'level = "info"')),
    Bad("sections", "a misspelt TrainingArguments key", "training.learning_rat", "did you mean 'learning_rate'?",
        profile=swap("learning_rate = 3e-3", "learning_rat = 3e-3")),
    Bad("sections", "an unknown key in [model.train_tokenizer]", "model.train_tokenizer.size", "",
        profile=put("model.train_tokenizer", "size = 10")),
    Bad("sections", "an unknown key in [model.lora]", "model.lora.rank", "",
        profile=DEMO.replace("[data]", "[model.lora]\nrank = 8\n\n[data]", 1)),
    Bad("sections", "an empty profile", "", "", profile=""),
    Bad("sections", "a profile that is not UTF-8", "", "not UTF-8 text",
        profile=None, files={"p.toml": "[run]\nname = \"d\xe9mo\"\n"}, encoding="latin-1"),
    Bad("sections", "an old TrainingArguments name", "", "", outcome=ACCEPTED,
        profile=swap('eval_strategy = "steps"', 'evaluation_strategy = "steps"')),
    # types
    Bad("types", "a quoted seed", "run.seed", "", profile=swap("seed = 42", 'seed = "42"')),
    Bad("types", "a quoted max_steps", "training.max_steps", "", profile=swap("max_steps = 150", 'max_steps = "150"')),
    Bad("types", "a word as the learning rate", "training.learning_rate", "",
        profile=swap("learning_rate = 3e-3", 'learning_rate = "fast"')),
    Bad("types", "a fraction as max_length", "data.max_length", "",
        profile=swap("max_length = 24", "max_length = 24.5")),
    Bad("types", "one metric as a string, not a list", "metrics.names", "",
        profile=swap('names = ["accuracy", "f1"]', 'names = "accuracy"')),
    Bad("types", "a number as the accelerator", "hardware.accelerator", "",
        profile=swap('accelerator = "cpu"', "accelerator = 1")),
    Bad("types", "a quoted num_processes", "distributed.num_processes", "",
        profile=swap("num_processes = 1", 'num_processes = "1"')),
    Bad("types", "a boolean as num_labels", "model.num_labels", "",
        profile=swap("num_labels = 2", "num_labels = true")),
    Bad("types", "yes as a TrainingArguments boolean", "training.fp16", "", profile=put("training", 'fp16 = "yes"')),
    Bad("types", "a fraction as the config's vocab_size", "model.config.vocab_size", "",
        profile=swap("vocab_size = 128\nhidden_size", "vocab_size = 128.5\nhidden_size")),
    Bad("types", "a list as the config's num_hidden_layers", "model.config.num_hidden_layers", "",
        profile=swap("num_hidden_layers = 2", "num_hidden_layers = [2]")),
    Bad("types", "a quoted tokenizer vocab_size", "model.train_tokenizer.vocab_size", "",
        profile=swap("trained on the training text\nvocab_size = 128", 'trained on the training text\nvocab_size = "128"')),
    Bad("types", "a number as the log level", "logging.log_level", "",
        profile=swap('log_level = "info"', "log_level = 3")),
    Bad("types", "a number as the run name", "run.name", "", profile=swap('name = "demo"', "name = 5")),
    Bad("types", "labels as one string", "model.labels", "",
        profile=swap("num_labels = 2", 'num_labels = 2\nlabels = "bad,good"')),
    Bad("types", "machines as a string", "distributed.machines", "", profile=put("distributed", 'machines = "node1"')),
    Bad("types", "a table as a TrainingArguments value", "training.weight_decay", "",
        profile=swap("weight_decay = 0.01", "weight_decay = { value = 0.01 }")),
    # values
    Bad("values", "a batch size of 0", "training.per_device_train_batch_size", "",
        profile=swap("per_device_train_batch_size = 32", "per_device_train_batch_size = 0")),
    Bad("values", "an eval_strategy transformers does not have", "training.eval_strategy", "",
        profile=swap('eval_strategy = "steps"', 'eval_strategy = "sometimes"')),
    Bad("values", "an accelerator tuitrain does not know", "hardware.accelerator", "",
        profile=swap('accelerator = "cpu"', 'accelerator = "tpu"')),
    Bad("values", "a strategy tuitrain does not know", "distributed.strategy", "",
        profile=swap('strategy = "single"', 'strategy = "horovod"')),
    Bad("values", "a misspelt metric", "metrics.names[0]", "",
        profile=swap('names = ["accuracy", "f1"]', 'names = ["acuracy"]')),
    Bad("values", "a task tuitrain does not know", "model.task", "",
        profile=swap('task = "sequence-classification"', 'task = "translation"')),
    Bad("values", "a generated data set that does not exist", "data.generate", "",
        profile=swap('generate = "sentiment-words"', 'generate = "sentiment"')),
    Bad("values", "fp8 mixed precision", "hardware.mixed_precision", "",
        profile=put("hardware", 'mixed_precision = "fp8"')),
    Bad("values", "a log level logging does not have", "logging.log_level", "",
        profile=swap('log_level = "info"', 'log_level = "verbose"')),
    Bad("values", "a negative seed", "run.seed", "", profile=swap("seed = 42", "seed = -1")),
    Bad("values", "a max_length of 0", "data.max_length", "", profile=swap("max_length = 24", "max_length = 0")),
    Bad("values", "no labels to learn", "model.num_labels", "", profile=swap("num_labels = 2", "num_labels = 0")),
    Bad("values", "a scheduler transformers does not have", "training.lr_scheduler_type", "",
        profile=put("training", 'lr_scheduler_type = "cosine_annealing"')),
    Bad("values", "an optimizer transformers does not have", "training.optim", "",
        profile=put("training", 'optim = "adam"')),
    Bad("values", "a tokenizer kind tuitrain does not train", "model.train_tokenizer.kind", "",
        profile=put("model.train_tokenizer", 'kind = "bpe"')),
    Bad("values", "a port above 65535", "distributed.main_process_port", "",
        profile=put("distributed", "main_process_port = 70000")),
    Bad("values", "an on_hang action that does not exist", "run.on_hang", "",
        profile=put("run", 'on_hang = "reboot"')),
    Bad("values", "a hang to restart with no restarts", "run.on_hang", "run.restarts = 0",
        profile=put("run", 'on_hang = "restart"')),
    Bad("values", "restarts below none", "run.restarts", "", profile=put("run", "restarts = -1")),
    Bad("values", "a batch split for a script that sets its own", "run.on_oom", "sets its own",
        profile=SCRIPT.format(body='path = "train.py"').replace('name = "mine"', 'name = "mine"\non_oom = "split_batch"'),
        files={"train.py": TRAIN_PY}),
    Bad("values", "a metric of another task", "metrics.names", "",
        outcome=ACCEPTED, profile=swap('names = ["accuracy", "f1"]', 'names = ["rouge"]')),
    Bad("values", "fp16 on the CPU", "hardware.mixed_precision", "",
        profile=put("hardware", 'mixed_precision = "fp16"')),
    Bad("values", "the best model kept without evaluating", "training.load_best_model_at_end", "",
        profile=swap('eval_strategy = "steps"', 'eval_strategy = "no"\nload_best_model_at_end = true')),
    Bad("values", "FSDP on the CPU", "distributed.strategy", "",
        profile=swap('strategy = "single"', 'strategy = "fsdp"')),
    Bad("values", "LoRA of rank 0", "model.lora.r", "",
        profile=DEMO.replace("[data]", "[model.lora]\nr = 0\n\n[data]", 1)),
    Bad("values", "a hang limit of 0", "run.hang_after", "", profile=put("run", "hang_after = 0")),
    Bad("values", "no processes", "distributed.num_processes", "",
        profile=swap("num_processes = 1", "num_processes = 0")),
    Bad("values", "no gradient accumulation steps", "training.gradient_accumulation_steps", "",
        profile=put("training", "gradient_accumulation_steps = 0")),
    Bad("values", "no CPU threads", "hardware.cpu_threads_per_process", "",
        profile=put("hardware", "cpu_threads_per_process = 0")),
    Bad("values", "a GPU named by a word with accelerator auto", "hardware.gpus", "",
        profile=swap('accelerator = "cpu"', 'accelerator = "auto"\ngpus = ["abc"]')),
    Bad("values", "GPU 3 on a machine without it", "hardware.gpus", "",
        profile=swap('accelerator = "cpu"', 'accelerator = "auto"\ngpus = [3]')),
    Bad("values", "any 9 GPUs on a machine of four", "hardware.gpus", "asks for any 9 GPUs, but this machine has 4",
        profile=swap('accelerator = "cpu"', 'accelerator = "cuda"\ngpus = 9'), nvml="four_gpu_mixed.json"),
    Bad("values", "a count of no GPUs", "hardware.gpus", "a count of GPUs must be at least 1",
        profile=swap('accelerator = "cpu"', 'accelerator = "cuda"\ngpus = 0'), nvml="four_gpu_mixed.json"),
    Bad("values", "more free memory than any GPU has", "hardware.min_free_memory", "is more than any GPU",
        profile=swap('accelerator = "cpu"', 'accelerator = "cuda"\nmin_free_memory = "200GiB"'),
        nvml="four_gpu_mixed.json"),
    Bad("types", "free memory without a unit", "hardware.min_free_memory", "is not a memory size",
        profile=put("hardware", 'min_free_memory = "20"')),
    Bad("values", "an empty model_type", "model.config.model_type", "",
        profile=swap('model_type = "bert"', 'model_type = ""')),
    Bad("values", "an old name beside its new one", "training.warmup_ratio", "an old name",
        profile=put("training", "warmup_ratio = 2.0")),
    # files
    Bad("files", "a training file that does not exist", "data.train_file", "", profile=from_files("missing.csv")),
    Bad("files", "a folder as the training file", "data.train_file", "is a folder, not a file",
        profile=from_files("data"), files={"data/x.csv": CSV_OK}),
    Bad("files", "a spreadsheet as the training file", "data.train_file", "",
        profile=from_files("train.xlsx"), files={"train.xlsx": "PK"}),
    Bad("files", "a model folder that does not exist", "model.name_or_path", "",
        profile=without_config(swap("num_labels = 2", 'num_labels = 2\nname_or_path = "./no-such-model"'))),
    Bad("files", "an empty folder as the model", "model.name_or_path", "holds no config.json",
        profile=without_config(swap("num_labels = 2", 'num_labels = 2\nname_or_path = "empty"')), files={"empty/.keep": ""}),
    Bad("files", "an output folder under /proc", "run.output_dir", "",
        profile=put("run", 'output_dir = "/proc/tuitrain-out"')),
    Bad("files", "a file as the output folder", "run.output_dir", "",
        profile=put("run", 'output_dir = "out.txt"'), files={"out.txt": "x"}),
    Bad("files", "a validation file that does not exist", "data.validation_file", "",
        profile=from_files("train.csv", "missing.csv"), files={"train.csv": CSV_OK}),
    Bad("files", "a profile that does not exist", "", "", profile=DEMO, ref=lambda folder: "nope.toml"),
    Bad("files", "a misspelt profile name", "", "", ref=lambda folder: "demoo"),
    Bad("values", "DeepSpeed on the CPU", "distributed.strategy", "runs on CUDA GPUs",
        profile=swap('strategy = "single"', 'strategy = "deepspeed"') + '\n[distributed.deepspeed]\nconfig_file = "ds.json"\n'),
    Bad("files", "a tokenizer folder that does not exist", "model.tokenizer", "no such folder",
        profile=demo(("[model.train_tokenizer]   # a WordLevel tokenizer trained on the training text\nvocab_size = 128\n", ""),
                     ("num_labels = 2", 'num_labels = 2\ntokenizer = "./tok"'))),
    # data contents
    Bad("data contents", "a CSV with a header and no rows", "data.train_file", "",
        profile=from_files("train.csv"), files={"train.csv": "text,label\n"}),
    Bad("data contents", "a CSV without the label column", "data.label_column", "",
        profile=from_files("train.csv"), files={"train.csv": "text\ngood film\n"}),
    Bad("data contents", "an empty CSV", "data.train_file", "",
        profile=from_files("train.csv"), files={"train.csv": ""}),
    Bad("data contents", "a JSON Lines line that is a list", "data.train_file", "",
        profile=from_files("train.jsonl"), files={"train.jsonl": '{"text": "a", "label": 1}\n[1, 2]\n'}),
    Bad("data contents", "a label above num_labels", "model.num_labels", "",
        profile=from_files("train.csv"), files={"train.csv": "text,label\ngood,1\nbad,5\n"}),
    Bad("data contents", "a CSV row with a field too many", "data.train_file", "line 3 has 3 fields, the header 2",
        profile=from_files("train.csv"), files={"train.csv": "text,label\ngood,1\nbad,0,extra\n"}),
    Bad("data contents", "a JSON file holding one object", "data.train_file", "",
        outcome=ACCEPTED, profile=from_files("train.json"), files={"train.json": '{"text": "a", "label": 1}'}),
    Bad("data contents", "a CSV with a NUL byte", "data.train_file", "",
        outcome=ACCEPTED, profile=from_files("train.csv"), files={"train.csv": "text,label\ngo\x00od,1\n"}),
    Bad("data contents", "fractional labels", "data.label_column", "",
        profile=from_files("train.csv"), files={"train.csv": "text,label\ngood,0.5\n"}),
    Bad("data contents", "a negative label", "data.label_column", "",
        profile=from_files("train.csv"), files={"train.csv": "text,label\ngood,-1\nbad,0\n"}),
    Bad("data contents", "a validation file with other columns", "data.text_column", "",
        profile=from_files("train.csv", "validation.csv"), files={"train.csv": CSV_OK, "validation.csv": "sentence,label\ngood,1\n"}),
    Bad("data contents", "a text column of the other file", "data.text_column", "",
        profile=from_files("train.csv").replace('text_column = "text"', 'text_column = "sentence"'), files={"train.csv": CSV_OK}),
    Bad("data contents", "a string label far down the file", "data.label_column", "",
        profile=from_files("train.csv"), files={"train.csv": CSV_OK * 200 + "late,positive\n"}),
    Bad("data contents", "a file not in UTF-8", "data.train_file", "",
        profile=from_files("train.csv"), files={"train.csv": "text,label\nd\xe9j\xe0 vu,1\n"}, encoding="latin-1"),
    Bad("data contents", "a CSV with a byte order mark and CRLF line ends", "", "", outcome=ACCEPTED,
        profile=from_files("train.csv"), files={"train.csv": "\ufeff" + CSV_OK.replace("\n", "\r\n")}),
    Bad("data contents", "text holding quoted commas", "", "", outcome=ACCEPTED, profile=from_files("train.csv"),
        files={"train.csv": CSV_OK + '"good, really good",1\n"bad, so bad",0\n'}),
    # scripts
    Bad("scripts", "a script that does not exist", "script.path", "", profile=script('path = "train.py"')),
    Bad("scripts", "a folder as the script", "script.path", "", profile=script('path = "src"'), files={"src/x.py": ""}),
    Bad("scripts", "a module name with a dash", "script.module", "", profile=script('module = "my-train"')),
    Bad("scripts", "both a script and a module", "script", "",
        profile=script('path = "train.py"\nmodule = "train"'), files={"train.py": TRAIN_PY}),
    Bad("scripts", "a [script] naming nothing", "script", "", profile=script('args = ["--epochs", "3"]')),
    Bad("scripts", "a script workdir that does not exist", "script.workdir", "",
        profile=script('path = "train.py"\nworkdir = "nowhere"'), files={"train.py": TRAIN_PY}),
    Bad("scripts", "a resume argument that is no option", "script.resume_arg", "",
        profile=script('path = "train.py"\nresume_arg = "resume"'), files={"train.py": TRAIN_PY}),
    Bad("scripts", "script arguments as one string", "script.args", "",
        profile=script('path = "train.py"\nargs = "--epochs 3"'), files={"train.py": TRAIN_PY}),
    # machines
    Bad("machines", "a host that ssh reads as an option", "distributed.machines[0].host", "",
        profile=machines('host = "-oProxyCommand=x"', 'host = "node2"')),
    Bad("machines", "an empty host", "distributed.machines[1].host", "",
        profile=machines('host = "node1"', 'host = ""')),
    Bad("machines", "a host with a space", "distributed.machines[0].host", "",
        profile=machines('host = "node 1"', 'host = "node2"')),
    Bad("machines", "one host listed twice", "distributed.machines[1].host", "",
        profile=machines('host = "node1"', 'host = "node1"')),
    Bad("machines", "machines without a port", "distributed.main_process_port", "",
        profile=machines('host = "node1"', 'host = "node2"', port=False)),
    Bad("machines", "two interfaces in one name", "distributed.network_interface", "",
        profile=machines('host = "node1"', 'host = "node2"').replace(
            "main_process_port = 29555", 'main_process_port = 29555\nnetwork_interface = "eth0,eth1"')),
    Bad("machines", "a machine without processes", "distributed.machines[0].num_processes", "",
        profile=machines('host = "node1"\nnum_processes = 0', 'host = "node2"')),
    Bad("machines", "a machine without a host", "distributed.machines[1].host", "",
        profile=machines('host = "node1"', 'python = "python3"')),
    Bad("machines", "two machines and no main address", "distributed.main_process_ip", "",
        profile=put("distributed", "num_machines = 2")),
    Bad("machines", "a machine rank past the machines", "distributed.machine_rank", "",
        profile=swap('strategy = "single"', 'strategy = "ddp"\nnum_machines = 2\nmachine_rank = 3\n'
                     'main_process_ip = "10.0.0.1"\nmain_process_port = 29555')),
    Bad("machines", "an interface name too long", "distributed.network_interface", "",
        profile=put("distributed", 'network_interface = "averyveryverylongname0"')),
    # CLI arguments
    Bad("CLI arguments", "--set without '='", "", "no '='", args=("--set", "training.max_steps")),
    Bad("CLI arguments", "--set without a section", "", "", args=("--set", "max_steps=3")),
    Bad("CLI arguments", "--set inside a TrainingArguments key", "training.foo", "(from --set)",
        args=("--set", "training.foo.bar=1")),
    Bad("CLI arguments", "--set of a section that does not exist", "lora", "(from --set)",
        args=("--set", "lora.r=abc")),
    Bad("CLI arguments", "--set of a word as max_steps", "training.max_steps", "(from --set)",
        args=("--set", "training.max_steps=abc")),
    Bad("CLI arguments", "--set under a key that holds a number", "data.max_length.x", "",
        args=("--set", "data.max_length.x=3")),
    Bad("CLI arguments", "--set of cuda on a machine without GPUs", "hardware.accelerator", "",
        args=("--set", "hardware.accelerator=cuda")),
    Bad("CLI arguments", "--set of a negative seed", "run.seed", "(from --set)", args=("--set", "run.seed=-3")),
    Bad("CLI arguments", "--set of an unknown option", "", "", args=("--sett", "run.seed=3")),
]


def setup(case: Bad, folder: Path) -> list[str]:
    """Write the case's files; the command's arguments after the verb."""
    for name, text in case.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding=case.encoding)
    if case.profile is not None:
        (folder / "p.toml").write_text(case.profile, encoding="utf-8")
    ref = case.ref(folder) if case.ref else str(folder / "p.toml") if "p.toml" in case.files or \
        case.profile is not None else "demo"
    return [ref, *(arg.replace("{dir}", str(folder)) for arg in case.args)]


@dataclass
class Said:
    code: int
    out: str
    err: str

    @property
    def first(self) -> str:
        """The first error line (warnings and notes may come before it)."""
        lines = [line for line in self.err.splitlines() if not any(f": {w}: " in line for w in ("warning", "note"))]
        return (lines or [""])[0]


def say(capsys: pytest.CaptureFixture[str], *argv: str) -> Said:
    """tuitrain's CLI in this process (validate and plan start nothing); any exception is a traceback the user
    would have seen."""
    capsys.readouterr()
    try:
        code = tuitrain_main(list(argv))
    except SystemExit as exc:  # argparse's refusal of an argument
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception:  # noqa: BLE001
        pytest.fail(f"tuitrain {' '.join(argv)} raised:\n{traceback.format_exc()}")
    said = capsys.readouterr()
    return Said(code, said.out, said.err)


def test_every_kind_is_in_the_corpus() -> None:
    assert {case.kind for case in CASES} == set(KINDS)
    assert len({case.name for case in CASES}) == len(CASES)
    assert len(CASES) >= 96


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh folder to work in, with its own runs root (validate and plan read the machine, never its runs)."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("TUITRAIN_RUNS_DIR", str(tmp_path / "runs"))
    return folder


def names_file_and_key(first: str, argv: list[str], key: str) -> bool:
    """The first line starts with the profile (or the argument given, or --set) and names the key."""
    named = first.split(": ")[0].split(":")[0]
    where = named in (argv[0], "--set", "tuitrain") or named.startswith("usage") or Path(named).is_file() \
        or Path(named).is_dir()
    return where and (not key or f": {key}: " in first)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_validate_and_plan_classify_each_bad_input(case: Bad, project: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if case.nvml:
        monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(Path(__file__).parent / "fixtures" / "nvml" / case.nvml))
    argv = setup(case, project)
    validated = say(capsys, "validate", *argv)
    planned = say(capsys, "plan", *argv)
    if case.outcome == ACCEPTED:
        assert validated.code == 0, validated.err
        assert planned.code == 0, planned.err  # what validate accepts, plan accepts
        return
    assert validated.code != 0, validated.out + validated.err  # refused, never silently accepted
    assert planned.code != 0, planned.out + planned.err
    assert case.says in validated.first, validated.first
    assert names_file_and_key(validated.first, argv, case.key), validated.first
    for line in validated.err.splitlines():  # every line of a refusal names a file or argument (and a count ends it)
        assert ": " in line or line.endswith("error(s)") or "error(s) on this machine" in line, line
    assert validated.first in planned.err, planned.err  # plan says the same first line


def test_a_table_made_by_set_is_placed_at_no_line_of_the_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A --set that makes a table the file does not hold is located at no line of the file (issue 27, item 6)."""
    said = say(capsys, "validate", "demo", "--set", "training.foo.bar=1")
    assert said.first.split(": ")[0].endswith("demo.toml"), said.first  # the file, with no :line:column
    assert said.first.split(": ")[1] == "training.foo" and "(from --set)" in said.first


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=c.defect)]
                                               if c.defect else []) for c in CASES if c.outcome == ACCEPTED])
def test_what_validate_accepts_a_short_run_finishes(case: Bad, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    runs_dir = tmp_path / "runs"
    argv = setup(case, folder)
    ran = cli("run", *argv, *SHORT_RUN, runs_dir=runs_dir, cwd=folder)
    text = ran.stdout + ran.stderr
    assert ran.returncode == 0 and "Traceback" not in text, text
    assert record(only_run(runs_dir))["status"] == "finished"
