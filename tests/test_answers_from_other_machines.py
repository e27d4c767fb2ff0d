"""What another machine answers, as it may come (another version's, or broken): a node agent's stacks
(`runs.view.stacks.stacks_from_json`), another workstation's `tuitrain stacks --json` (the Stacks screen's
`remote_stacks`) and the checkpoints of a box's run its mirror brings (`rundir.checkpoints.checkpoints_from_json`).
Each is checked where it is read: one that checks is drawn as this machine's are, one that does not is a line naming
the key (or, a checkpoint, left out). (Before, a box's `"file": 5` raised TypeError after the stacks reader's try, in
the screen's worker: the screen stayed on "taking…"; a checkpoint with a key a newer version adds raised TypeError
in the monitor of that box's run.)"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_hangs import FAULTHANDLER
from test_run_record_property import FUZZ, JSON, records
from test_workstations_monitor_keys import STACKS_JSON
from tuitrain.rundir.checkpoints import Checkpoint, CheckpointJson, checkpoints_from_json
from tuitrain.runs.view.stacks import RankStacks, RankTextJson, parse_stacks, stacks_from_json, stacks_json
from tuitrain.runs.view.stacks_json import RankJson
from tuitrain.tui.screens.stacks import Stacks, remote_stacks, stacks_text

NODE = stacks_json({0: RankStacks(0, 41, "faulthandler", FAULTHANDLER, threads=parse_stacks(FAULTHANDLER))})
RANK = STACKS_JSON["ranks"]["0"]


def test_a_nodes_answer_reads_back_as_it_was_written() -> None:
    (back,) = stacks_from_json(json.loads(json.dumps(NODE))).values()
    assert (back.rank, back.pid, back.how, back.text) == (0, 41, "faulthandler", FAULTHANDLER)


@FUZZ
@given(ranks=st.dictionaries(st.sampled_from(["0", "1", "x", "-1"]),
                             records(NODE["0"], typing.get_type_hints(RankTextJson)) | JSON, max_size=2),
       whole=JSON, broken=st.booleans())
def test_a_nodes_answer_as_it_comes_is_stacks_or_a_value_error(ranks: dict[str, Any], whole: Any, broken: bool) -> None:
    try:
        stacks_from_json(whole if broken else ranks)
    except ValueError as exc:
        assert "\n" not in str(exc)


@FUZZ
@given(rank=records(RANK, typing.get_type_hints(RankJson)) | JSON, digest=st.just(STACKS_JSON["digest"]) | JSON,
       whole=JSON, broken=st.booleans())
def test_a_boxs_stacks_json_as_it_comes_is_drawn_or_said(rank: Any, digest: Any, whole: Any, broken: bool) -> None:
    answer = whole if broken else {**STACKS_JSON, "digest": digest, "ranks": {"0": rank}}
    shown = remote_stacks("node1", json.dumps(answer))
    if isinstance(shown, str):
        assert shown.startswith("node1: ") and "\n" not in shown
    else:
        assert isinstance(shown, Stacks)
        stacks_text(shown)
        stacks_text(shown, all_threads=True)


@pytest.mark.parametrize("key, value", [("file", 5), ("pid", "41"), ("threads", [{"name": "t", "frames": [[1]]}])])
def test_a_wrong_key_in_a_boxs_stacks_is_named(key: str, value: Any) -> None:
    shown = remote_stacks("node1", json.dumps({**STACKS_JSON, "ranks": {"0": {**RANK, key: value}}}))
    assert isinstance(shown, str) and f"ranks.0.{key}" in shown, shown


CHECKPOINT = Checkpoint(40, Path("/box/out/checkpoint-40"), True, (), {"eval_loss": 0.25}, 2**20, 2, "r1", True)


def test_a_boxs_checkpoints_read_back_as_written_and_a_newer_versions_key_is_left_alone() -> None:
    written = json.loads(json.dumps([CHECKPOINT.to_dict(), {**CHECKPOINT.to_dict(), "step": 50, "shards": 8}]))
    assert checkpoints_from_json(written) == [CHECKPOINT, dataclasses.replace(CHECKPOINT, step=50)]
    assert checkpoints_from_json({"step": 1}) == [] and checkpoints_from_json(None) == []
    damaged = {**CHECKPOINT.to_dict(), "complete": False, "missing": ["model-\udcff.safetensors is empty"]}
    (read,) = checkpoints_from_json(json.loads(json.dumps([damaged])))  # a file's name there, not UTF-8
    assert read.missing == ("model-\ufffd.safetensors is empty",)


@FUZZ
@given(found=st.lists(records(dict(CHECKPOINT.to_dict()), typing.get_type_hints(CheckpointJson)) | JSON, max_size=3))
def test_a_boxs_checkpoints_as_they_come_are_each_read_or_left_out(found: list[Any]) -> None:
    from tuitrain.rundir.json_shape import problem
    from tuitrain.tui.screens.resume import box_checkpoint

    read = checkpoints_from_json(found)
    assert [c.step for c in read] == [c["step"] for c in found if problem(c, CheckpointJson) is None]
    for ref in ("latest", "checkpoint-40", "/box/out/checkpoint-40"):
        chosen = box_checkpoint(read, ref)
        assert chosen is None or (chosen.complete and chosen in read)
