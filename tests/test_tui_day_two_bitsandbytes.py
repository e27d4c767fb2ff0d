"""Issue 21, defect 10: a rank whose profile neither quantizes nor picks a bitsandbytes optimizer never
imports bitsandbytes (peft, which transformers imports whenever it is installed, would; bitsandbytes then
logs "Failed to load CPU gemm_4bit_forward from kernels-community: …" in every rank)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a real demo run (shared) and an import of transformers


def test_a_demo_ranks_log_has_no_bitsandbytes_line(finished_run: Path) -> None:
    log = (finished_run / "logs" / "rank-0.log").read_text()
    assert "[tuitrain] rank 0/1" in log  # the rank ran
    assert "gemm_4bit_forward" not in log and "bitsandbytes" not in log, log


def test_transformers_loads_without_bitsandbytes_for_a_demo_profile_and_with_it_for_qlora() -> None:
    script = """
import sys
from tuitrain.engine.lora import keep_out_bitsandbytes
from tuitrain.profile import settings_with_defaults
from tuitrain.profile.load import load_profile
from tuitrain.profile.lookup import builtin_profile_path
profile = settings_with_defaults(load_profile(builtin_profile_path("demo")))
keep_out_bitsandbytes(profile)
from transformers import Trainer  # noqa: F401  (imports peft, which would import bitsandbytes)
import peft  # noqa: F401
print("bitsandbytes" in sys.modules and sys.modules["bitsandbytes"] is not None)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"], result.stdout + result.stderr
    assert "gemm_4bit_forward" not in result.stderr


@pytest.mark.parametrize("model, training, needed", [
    ({}, {}, False),
    ({"lora": {"r": 8}}, {"optim": "adamw_torch"}, False),
    ({"lora": {"quantize": "nf4"}}, {}, True),
    ({}, {"optim": "adamw_bnb_8bit"}, True),
    ({}, {"optim": "paged_adamw_32bit"}, True),
    ({}, {"optim": "galore_adamw_8bit"}, True),
    ({}, {"optim": "galore_adamw"}, True),  # galore_torch imports it for any of its optimizers
])
def test_bitsandbytes_is_needed_only_to_quantize_or_for_its_optimizers(model, training, needed) -> None:
    from tuitrain.engine.lora import needs_bitsandbytes

    assert needs_bitsandbytes({"model": model, "training": training}) is needed
