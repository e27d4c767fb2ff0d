"""GaLore (training.optim = "galore_adamw"), verified rather than passed through: the optimizer the
run saved keeps low-rank moments for the layers training.optim_target_modules names, and a name that
matches no linear layer fails the run in one line before training."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FAST, cli, only_run, record

pytest.importorskip("galore_torch")
pytestmark = pytest.mark.slow

RANK = 4
GALORE = ["--set", "training.optim=galore_adamw", "--set", f"training.optim_args=rank={RANK}, update_proj_gap=2, scale=0.25"]


def test_galore_projects_the_named_layers(runs_dir):
    import torch

    result = cli("run", "demo", *FAST, *GALORE, "--set", 'training.optim_target_modules=["attention", "intermediate"]',
                 runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    saved = torch.load(Path(record(only_run(runs_dir))["output_dir"]) / "checkpoint-8" / "optimizer.pt", weights_only=False)
    (galore,) = [g for g in saved["param_groups"] if "rank" in g]
    assert galore["rank"] == RANK and galore["update_proj_gap"] == 2
    assert len(galore["params"]) == 2 * 4 + 2 * 1  # per layer: query, key, value, attention output; intermediate
    for index in galore["params"]:  # the moments live in the projected space (the layers are 32 and 64 wide)
        assert RANK in saved["state"][index]["exp_avg"].shape, saved["state"][index]["exp_avg"].shape


def test_a_target_matching_no_linear_layer_is_one_line(runs_dir):
    result = cli("run", "demo", *FAST, *GALORE, "--set", 'training.optim_target_modules=["attention", "mlp"]',
                 runs_dir=runs_dir)
    assert result.returncode != 0
    error = record(only_run(runs_dir))["error"]
    assert "training.optim_target_modules: 'mlp' matches none of this model's linear layers" in error, error
    assert "query" in error and "\n" not in error
