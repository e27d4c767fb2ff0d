"""`rundir.run.Run`'s fields are run.json's: each `Field` is named for a key `RunRecord` declares and typed as it is
(with None added where its empty value is None), so a reader that asks `run.error` gets what the record checked."""

from __future__ import annotations

import types
import typing

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Field, Fields, RecordFields, Run

HINTS = typing.get_type_hints(RunRecord)  # Annotated ranges stripped: the types a reader gets
FIELDS = {name: value for name, value in vars(RecordFields).items() if isinstance(value, Field)}


def test_every_field_is_a_key_of_the_record_typed_as_the_record_types_it() -> None:
    assert len(FIELDS) > 20
    for name, field in FIELDS.items():
        assert field.key in HINTS, f"Run.{name} reads {field.key}, no key of RunRecord"
        name = field.key
        declared = typing.get_args(field.__orig_class__)[0]  # type: ignore[attr-defined]
        hint = HINTS[name]
        never_null = tuple(t for t in typing.get_args(hint) if t is not type(None))
        if typing.get_origin(hint) not in (typing.Union, types.UnionType):
            never_null = (hint,)
        # empty None: it may be null; another empty value: it never is (the hint without None)
        expected = typing.Optional[hint] if field.empty is None else typing.Union[never_null]
        assert declared == expected, f"Run.{name} is {declared}, RunRecord's {name} is {HINTS[name]}"


def test_a_field_reads_the_record_and_an_empty_one_is_never_shared(tmp_path) -> None:
    paths = RunPaths(tmp_path / "run")
    unreadable = Run(paths, None, "empty file")
    older: RunRecord = {"status": "failed", "error": None, "env": {"A": "1"}}  # an older version's nulls
    assert (unreadable.error, unreadable.env, Run(paths, older).error, Run(paths, older).env) == (None, {}, None, {"A": "1"})
    unreadable.env["B"] = "2"
    assert unreadable.env == {} and Run(paths, {"status": "queued"}).queue == {}
    assert Fields(older).error is None and Fields(older).final and not Fields(None).final
