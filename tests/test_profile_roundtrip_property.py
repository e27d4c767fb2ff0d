"""Property: whatever a profile's data is changed to (values replaced, keys added and removed, tables
and lists of tables grown, shrunk or replaced), editing the file in place gives a text that tomllib
reads back to exactly the new data, and a new file's text does too."""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_profile_roundtrip import DOTTED, HAND_EDITED, MACHINES
from tuitrain.profile import builtin_profile_path, save_profile
from tuitrain.profile.toml_edit import edit, render, same

SPLIT = """\
# tables in pieces, quoted keys, literal and multi-line strings, a table holding only tables
[a]
x = 1
"quoted key" = 'literal'

[b.c]
y = [
    1,  # one
    2,
]

[a.sub]
z = \"\"\"two
lines\"\"\"

[deep.er.est]
v = 1979-05-27T07:32:00Z
w = { p = { q = [ { r = 1 } ] } }
"""

ROOT_KEYS = """\
top = "a root key"   # before any table
other.dotted = true

[t]
k = 1.5
"""

TEXTS = [HAND_EDITED, DOTTED, MACHINES, SPLIT, ROOT_KEYS, builtin_profile_path().read_text(encoding="utf-8")]

keys = st.one_of(st.sampled_from(["name", "x", "host", "machines", "config", "a.b", "with space", "ünï", ""]),
                 st.text(min_size=1, max_size=6))
scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=12),
    st.dates(),
    st.datetimes(timezones=st.sampled_from([None, dt.timezone.utc])).map(lambda d: d.replace(microsecond=0)),
)


def values(depth: int) -> st.SearchStrategy[Any]:
    if depth <= 0:
        return scalars
    inner = values(depth - 1)
    tables = st.dictionaries(keys, inner, max_size=3)
    return st.one_of(scalars, st.lists(inner, max_size=3), tables, st.lists(tables, min_size=1, max_size=3))


@st.composite
def changed(draw: st.DrawFn, value: dict[str, Any], depth: int = 3) -> dict[str, Any]:
    """`value` with some keys kept, some dropped, some replaced, some changed inside, some added."""
    out: dict[str, Any] = {}
    for key, old in value.items():
        what = draw(st.sampled_from(["keep", "keep", "drop", "replace", "inside", "inside"]))
        if what == "drop":
            continue
        if what == "replace":
            out[key] = draw(values(depth))
        elif what == "inside" and isinstance(old, dict):
            out[key] = draw(changed(old, depth - 1))
        elif what == "inside" and old and isinstance(old, list) and all(isinstance(t, dict) for t in old):
            kept = [draw(changed(t, depth - 1)) for t in old[:draw(st.integers(0, len(old)))]]
            out[key] = kept + draw(st.lists(st.dictionaries(keys, values(depth - 1), max_size=3), max_size=2))
        else:
            out[key] = old
    for key, new in draw(st.dictionaries(keys, values(depth), max_size=2)).items():
        out.setdefault(key, new)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_edit_reads_back_to_the_new_data(data: st.DataObject) -> None:
    text = data.draw(st.one_of(st.sampled_from(TEXTS), st.dictionaries(keys, values(3), max_size=4).map(render)))
    old = tomllib.loads(text)
    new = data.draw(changed(old))
    out = edit(text, old, new)
    assert same(tomllib.loads(out), new), out


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(keys, values(3), max_size=4))
def test_a_new_file_reads_back_to_its_data(new: dict[str, Any]) -> None:
    assert same(tomllib.loads(render(new)), new)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_saving_always_writes_the_new_data(tmp_path: Path, data: st.DataObject) -> None:
    path = tmp_path / "p.toml"
    text = data.draw(st.sampled_from(TEXTS))
    path.write_text(text)
    new = data.draw(changed(tomllib.loads(text)))
    assert save_profile(new, path) == []  # edited in place: no backup needed, no warning
    assert same(tomllib.loads(path.read_text()), new)
