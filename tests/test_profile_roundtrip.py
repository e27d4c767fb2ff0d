"""Saving a hand-edited profile keeps what the person wrote: comments, key order, blank lines, dotted
keys and inline tables; only the lines for what changed differ. A new file gets [sections] and
[[distributed.machines]] blocks."""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path

from tuitrain.profile import save_profile

HAND_EDITED = """\
# my run: tiny BERT on the lab box
# (keep the seed: results are compared across runs)

[run]
seed = 7          # fixed on purpose
name = "mine"

[model]
task = "sequence-classification"
num_labels = 2

[model.config]   # trained from scratch
model_type = "bert"
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2

[training]
# the long run
max_steps = 400
learning_rate = 3e-3   # tuned by hand
# warmup is short: the model is tiny
warmup_steps = 10
report_to = "none"

# tracking, once the server is back
[logging]
tensorboard = true

[distributed]
strategy = "ddp"     # two machines
num_processes = 1
"""


def read(path: Path) -> dict:
    """The file's data as the editor holds it (parsed only: these profiles need not be complete)."""
    return tomllib.loads(path.read_text())


def unified(before: str, after: str) -> list[str]:
    """The changed lines only: '-old' and '+new', in order."""
    return [line.rstrip("\n") for line in difflib.unified_diff(before.splitlines(True), after.splitlines(True), n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_a_hand_edited_profile_changes_only_the_edited_lines(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(HAND_EDITED)
    data = read(path)
    data["training"]["learning_rate"] = 1e-3  # changed: stays where it was, with its comment
    data["training"]["weight_decay"] = 0.01  # added: after the table's last key
    del data["training"]["warmup_steps"]  # removed, with the comment line above it
    data["distributed"]["machines"] = [{"host": "node1"}, {"host": "node2", "workdir": "/srv/work"}]
    del data["logging"]  # a section removed, with the comment line above its header

    assert save_profile(data, path) == []
    text = path.read_text()
    assert tomllib.loads(text) == data
    # the edited lines, and nothing else: the header comment, the comments between keys, the blank
    # lines and the person's key order ([run] has seed before name) are as they were
    assert text == HAND_EDITED.replace(
        "learning_rate = 3e-3   # tuned by hand\n# warmup is short: the model is tiny\nwarmup_steps = 10\n"
        'report_to = "none"\n',
        'learning_rate = 0.001   # tuned by hand\nreport_to = "none"\nweight_decay = 0.01\n',
    ).replace(
        "# tracking, once the server is back\n[logging]\ntensorboard = true\n\n", "",
    ) + (
        '\n[[distributed.machines]]\nhost = "node1"\n'
        '\n[[distributed.machines]]\nhost = "node2"\nworkdir = "/srv/work"\n'
    )
    assert text.startswith("# my run: tiny BERT on the lab box\n# (keep the seed")
    assert 'seed = 7          # fixed on purpose\nname = "mine"' in text  # the person's key order
    assert not (tmp_path / "mine.toml.bak").exists()


def test_saving_unchanged_data_leaves_the_file_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(HAND_EDITED)
    assert save_profile(read(path), path) == []
    assert path.read_text() == HAND_EDITED


DOTTED = """\
[run]
name = "dotted"

[model]
task = "causal-lm"
config.model_type = "gpt2"   # dotted keys, kept dotted
config.n_layer = 2
tokenizer = { name = "gpt2", use_fast = true }

[distributed]
strategy = "fsdp"
fsdp = { sharding_strategy = "full_shard", cpu_offload = false }
machines = [ { host = "a" }, { host = "b" } ]
"""


def test_dotted_keys_and_inline_tables_keep_their_form(tmp_path: Path) -> None:
    path = tmp_path / "dotted.toml"
    path.write_text(DOTTED)
    data = read(path)
    data["model"]["config"]["n_layer"] = 4
    data["model"]["config"]["n_head"] = 2
    data["model"]["tokenizer"]["use_fast"] = False
    data["distributed"]["fsdp"]["cpu_offload"] = True
    data["distributed"]["machines"][1]["host"] = "c"

    assert save_profile(data, path) == []
    text = path.read_text()
    assert tomllib.loads(text) == data
    assert unified(DOTTED, text) == [
        "-config.n_layer = 2",
        "-tokenizer = { name = \"gpt2\", use_fast = true }",
        "+config.n_layer = 4",
        "+config.n_head = 2",  # a new key in a dotted table: dotted too, after its last key
        "+tokenizer = { name = \"gpt2\", use_fast = false }",
        "-fsdp = { sharding_strategy = \"full_shard\", cpu_offload = false }",
        "-machines = [ { host = \"a\" }, { host = \"b\" } ]",
        "+fsdp = { sharding_strategy = \"full_shard\", cpu_offload = true }",
        "+machines = [ { host = \"a\" }, { host = \"c\" } ]",
    ]


MACHINES = """\
[distributed]
strategy = "ddp"
num_processes = 1

# the main machine (rank 0)
[[distributed.machines]]
host = "node1"   # rendezvous here

# a second box
[[distributed.machines]]
host = "node2"
workdir = "/srv/work"

[hardware]
accelerator = "cpu"
"""


def test_machine_blocks_are_edited_in_place_added_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(MACHINES)
    data = read(path)
    data["distributed"]["machines"][0]["python"] = "/opt/py/bin/python"
    data["distributed"]["machines"][1]["workdir"] = "/srv/other"
    data["distributed"]["machines"].append({"host": "node3", "gpus": [0, 1]})

    assert save_profile(data, path) == []
    text = path.read_text()
    assert tomllib.loads(text) == data
    assert unified(MACHINES, text) == [
        '+python = "/opt/py/bin/python"',
        '-workdir = "/srv/work"',
        '+workdir = "/srv/other"',
        "+",
        "+[[distributed.machines]]",
        '+host = "node3"',
        "+gpus = [0, 1]",
    ]

    del data["distributed"]["machines"][1:]  # the machines after the first removed, with their comments
    assert save_profile(data, path) == []
    text = path.read_text()
    assert tomllib.loads(text) == data
    assert text == MACHINES.replace(
        'host = "node1"   # rendezvous here\n', 'host = "node1"   # rendezvous here\npython = "/opt/py/bin/python"\n',
    ).replace('# a second box\n[[distributed.machines]]\nhost = "node2"\nworkdir = "/srv/work"\n\n', "")


def test_a_new_file_has_sections_and_machine_blocks_not_inline_tables(tmp_path: Path) -> None:
    data = {
        "run": {"name": "fresh"},
        "model": {"task": "causal-lm", "config": {"model_type": "gpt2", "n_layer": 2}},
        "distributed": {"strategy": "ddp", "num_processes": 1,
                        "machines": [{"host": "node1"}, {"host": "node2", "gpus": [0, 1]}]},
    }
    path = tmp_path / "fresh.toml"
    assert save_profile(data, path) == []
    text = path.read_text()
    assert tomllib.loads(text) == data
    assert text == """\
[run]
name = "fresh"

[model]
task = "causal-lm"

[model.config]
model_type = "gpt2"
n_layer = 2

[distributed]
strategy = "ddp"
num_processes = 1

[[distributed.machines]]
host = "node1"

[[distributed.machines]]
host = "node2"
gpus = [0, 1]
"""


def test_a_file_that_no_longer_parses_is_backed_up_before_it_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    broken = '# half-edited by hand\n[run\nname = "x"\n'
    path.write_text(broken)
    [warning] = save_profile({"run": {"name": "x"}}, path)
    backup = tmp_path / "broken.toml.bak"
    assert warning.severity == "warning" and str(backup) in warning.message
    assert backup.read_text() == broken
    assert tomllib.loads(path.read_text()) == {"run": {"name": "x"}}
