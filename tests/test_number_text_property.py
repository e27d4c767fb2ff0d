"""Text that should be a number, as the world writes it: a folder `machine-²` beside a run's nodes, a CSV label
"--5", an accelerate config's "1_000" or "٣". `str.isdigit` holds for "²" and `int` refuses it, so a reader that
tested one and called the other raised; each reader here takes any text and answers a number or leaves it be."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from tuitrain.hardware.mapping import resolve, visible_gpus
from tuitrain.profile.accelerate_canonical import as_int, gpu_id_list
from tuitrain.profile.values import whole_number
from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.keeper.attempts import checkpoint_step

set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "tuitrain-hypothesis")

NUMBERISH = st.text(alphabet=st.sampled_from("0123456789²³¹٣߀+-_ .e"), max_size=6) | st.text(max_size=6)


@given(NUMBERISH)
def test_a_whole_number_is_ascii_digits_with_a_sign_and_nothing_else_raises(text: str) -> None:
    number = whole_number(text)
    body = text.strip().removeprefix("-").removeprefix("+") if text.strip()[:1] in "+-" else text.strip()
    assert (number is not None) == (body.isascii() and body.isdecimal())
    assert number is None or number == int(text)
    as_int(text)
    found = gpu_id_list(text)
    assert found is None or found == "all" or all(isinstance(i, str) or i >= 0 for i in found)
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": f"0,{text}"}, []) == [] and resolve(text, []) == (None, None)
    assert checkpoint_step(f"/out/checkpoint-{text}") >= 0


def test_the_edge_cases_by_name() -> None:
    assert [whole_number(t) for t in (" -3 ", "+7", "²", "1_000", "٣", "--5", "", "-")] == [-3, 7] + [None] * 6
    assert as_int("--5") == "--5" and as_int("4") == 4 and gpu_id_list("0,²") is None


def test_a_nodes_folder_of_any_name_is_a_node_only_when_its_rank_is_a_number(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path / "run")
    for name in ("machine-²", "machine-٣", "machine-", "machine-0", "machine-x", "machine-2"):
        (paths.root / "nodes" / name).mkdir(parents=True)
    assert sorted(paths.nodes()) == [0, 2]
