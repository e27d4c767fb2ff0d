"""A corpus of bad inputs a real user makes (issue 27), each run through `validate`, `plan` and `run`.

Each case is one row of `CASES`: its kind (sections, types, values, files, data contents, CLI
arguments), how to make it (a profile written into a fresh folder, data files beside it, the command
line's extra arguments), and the key and words its first line must hold. Every command must refuse it
without a traceback, in lines naming the file (or the argument) and the key; `run` must say the same
first line as `validate` and start nothing. Add a row for each new kind of mistake.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from conftest import cli
from tuitrain.profile import builtin_profile_path

DEMO = builtin_profile_path().read_text(encoding="utf-8")
KINDS = ("sections", "types", "values", "files", "data contents", "CLI arguments")


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
]


def setup(case: Bad, folder: Path) -> list[str]:
    """Write the case's files; the command's arguments after the verb."""
    for name, text in case.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    if case.profile is not None:
        (folder / "p.toml").write_text(case.profile, encoding="utf-8")
    ref = case.ref(folder) if case.ref else str(folder / "p.toml") if case.profile is not None else "demo"
    return [ref, *case.args]


def test_every_kind_is_in_the_corpus() -> None:
    assert {case.kind for case in CASES} == set(KINDS)
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_bad_input_is_refused_in_one_line_naming_file_and_key(case: Bad, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    runs_dir = tmp_path / "runs"
    argv = setup(case, folder)
    validated = cli("validate", *argv, runs_dir=runs_dir, cwd=folder)
    planned = cli("plan", *argv, runs_dir=runs_dir, cwd=folder)
    ran = cli("run", *argv, runs_dir=runs_dir, cwd=folder)
    for result in (validated, planned, ran):
        text = result.stdout + result.stderr
        assert result.returncode != 0 and "Traceback" not in text, text  # refused, never silently accepted
    first = validated.stderr.splitlines()[0]
    assert case.says in first, first
    named = first.split(": ")[0].split(":")[0]
    assert named == argv[0] or Path(named).is_file(), first  # the file (or the argument given) comes first
    if case.key:
        assert f": {case.key}: " in first, first
    assert first in planned.stderr and first in ran.stderr, planned.stderr + ran.stderr  # the same words
    assert not runs_dir.exists() or list(runs_dir.iterdir()) == []  # nothing started
