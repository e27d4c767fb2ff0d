"""The data preview (`tuitrain preview`, and ctrl+t in the launch dialog): the real MRPC CSVs
with the real all-MiniLM-L6-v2 tokenizer, read without the ML stack, checked against what
transformers' own tokenizer (the engine's) makes of them."""

from __future__ import annotations

import asyncio
import csv
from collections import Counter
from pathlib import Path

import pytest

from conftest import MRPC, cli, minilm_dir, mrpc_minilm_sections
from test_tui_app import make_app, until


@pytest.fixture
def mrpc_profile(tmp_path: Path) -> Path:
    path = tmp_path / "mrpc.toml"
    path.write_text(f"""
{mrpc_minilm_sections(32)}[training]
max_steps = 4
[hardware]
accelerator = "cpu"
""")
    return path


def csv_rows() -> list[dict[str, str]]:
    with open(MRPC / "train.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def engine_tokens(first: str, second: str, max_length: int) -> list[str]:
    """What the engine's tokenizer (transformers' AutoTokenizer, as engine/data.py calls it) gives."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    ids = tokenizer(first, second, truncation=True, max_length=max_length)["input_ids"]
    return tokenizer.convert_ids_to_tokens(ids)


def test_mrpc_rows_labels_and_lengths_match_the_engine(mrpc_profile: Path):
    from transformers import AutoTokenizer

    from tuitrain.profile import load_profile
    from tuitrain.profile.preview import preview_profile, suggested_max_length

    preview = preview_profile(load_profile(mrpc_profile), rows=3)
    rows = csv_rows()
    assert preview.total == len(rows)
    assert dict(preview.labels) == {int(k): v for k, v in Counter(r["label"] for r in rows).items()}
    first = rows[0]
    assert preview.rows[0].tokens == engine_tokens(first["sentence1"], first["sentence2"], 32)
    assert len(preview.rows[0].tokens) == 32  # row 0 is longer: cut as the engine cuts a pair (longest first)

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    lengths = [len(ids) for ids in tokenizer([r["sentence1"] for r in rows], [r["sentence2"] for r in rows])["input_ids"]]
    assert preview.lengths == lengths
    suggested = suggested_max_length(preview.lengths)
    assert suggested % 8 == 0
    assert sum(length <= suggested for length in lengths) >= 0.95 * len(lengths)


def test_the_cli_prints_the_preview(mrpc_profile: Path, tmp_path: Path):
    result = cli("preview", str(mrpc_profile), "--rows", "2", "--set", "data.max_length=48", runs_dir=tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    counts = Counter(r["label"] for r in csv_rows())
    labels = [line.split() for line in out[out.index("labels:") + 1:out.index("labels:") + 3]]
    assert {row[0]: int(row[1]) for row in labels} == dict(counts)
    assert any(line.startswith("suggested data.max_length = ") for line in out), out
    assert any(line.startswith("data.max_length = 48 truncates ") for line in out), out
    tokens = [line for line in out if line.strip().split(" ", 1)[-1].startswith("tokens  [CLS] am ##ro ##zi")]
    assert tokens, out


def test_what_the_preview_cannot_read_is_one_line(tmp_path: Path):
    hub = tmp_path / "hub.toml"
    hub.write_text('[model]\ntask = "sequence-classification"\nname_or_path = "bert-base-uncased"\nnum_labels = 2\n'
                   '[data]\ndataset = "glue"\ndataset_config = "mrpc"\n[hardware]\naccelerator = "cpu"\n')
    result = cli("preview", str(hub), runs_dir=tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("data.dataset = 'glue': a Hub data set is read by the rank")

    demo = cli("preview", "demo", runs_dir=tmp_path / "runs")
    assert demo.returncode == 0, demo.stderr
    assert demo.stdout.splitlines()[-1].startswith("model.train_tokenizer: the tokenizer is trained")
    assert "Traceback" not in result.stdout + result.stderr + demo.stdout + demo.stderr


def test_ctrl_t_in_the_launch_dialog_previews_the_data_with_its_overrides(mrpc_profile: Path, tmp_path: Path):
    from tuitrain.tui.screens.launch import LaunchScreen

    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)

    async def main() -> list[str]:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.polls > 0, what="home")
            app.push_screen(LaunchScreen(mrpc_profile))
            await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen", what="the launch dialog")
            await pilot.press(*"data.max_length=40")
            await pilot.press("ctrl+t")
            await until(pilot, lambda: type(app.screen).__name__ == "DataPreviewScreen", what="the preview")
            preview = app.screen
            await until(pilot, lambda: preview.lines, 30, "the preview's lines")
            await pilot.press("escape")
            await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen", what="back to the launch dialog")
            return preview.lines

    lines = asyncio.run(main())
    counts = Counter(r["label"] for r in csv_rows())
    assert f"       0  {counts['0']:>7}  {counts['0'] / sum(counts.values()):6.1%}" in lines, lines
    assert any(line.startswith("data.max_length = 40 truncates ") for line in lines), lines
    first = csv_rows()[0]
    expected = engine_tokens(first["sentence1"], first["sentence2"], 40)
    assert f"  {len(expected)} tokens  " + " ".join(expected) in lines, lines
