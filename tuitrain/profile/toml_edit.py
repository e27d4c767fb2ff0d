"""Round-trip TOML: apply a profile's new data onto the text of its file, keeping what a person wrote.

A changed value is replaced where it stands (its trailing comment kept); a new key goes after the last
key of its table; a removed key goes with the comment lines right above it; a new table is written as
a `[section]`, a list of tables as `[[section]]` blocks. Nested tables keep the form they were written
in (a `[a.b]` header, dotted keys, an inline table). tomlkit does the parsing and rendering; the
callers check what comes out with tomllib, so a corner tomlkit gets wrong is caught, not written.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

import tomlkit
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.items import AoT, Array, Comment, InlineTable, Item, Key, Null, Table, Whitespace

Tableish = Container | Table | InlineTable | OutOfOrderTableProxy


def same(a: Any, b: Any) -> bool:
    """Equal as TOML values: 1, 1.0 and true differ; a tuple equals the list it is written as."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, _dt.datetime) and a.tzinfo != b.tzinfo:
        return False
    return bool(a == b)


def _is_tables(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, dict) for v in value)


def _inline(value: Any) -> Any:
    """`value` as a tomlkit value that sits on one key's line (arrays, inline tables)."""
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        for k, v in value.items():
            table.append(k, _inline(v))
        return table
    if isinstance(value, (list, tuple)):
        array = tomlkit.array()
        array.extend(_inline(v) for v in value)
        return array
    return tomlkit.item(value)


def _table(value: dict[str, Any]) -> Table:
    """A `[section]` table: its tables as sections, its lists of tables as `[[...]]` blocks. An empty
    one keeps its header (a header-less table with nothing in it would not be written at all)."""
    table = tomlkit.table(is_super_table=False if not value else None)
    for k, v in value.items():
        table.append(k, _block(v))
    return table


def _aot(value: list[Any] | tuple[Any, ...]) -> AoT:
    aot = tomlkit.aot()
    for v in value:
        aot.append(_table(v))
    return aot


def _block(value: Any) -> Any:
    """A new value outside any inline table: tables and lists of tables get headers."""
    if isinstance(value, dict):
        return _table(value)
    if _is_tables(value):
        return _aot(value)
    return _inline(value)


def render(data: dict[str, Any]) -> str:
    """A new file's text: sections as `[tables]`, lists of tables as `[[...]]`."""
    doc = tomlkit.document()
    for k, v in data.items():
        doc.append(k, _block(v))
    return tomlkit.dumps(doc)


def edit(text: str, old: dict[str, Any], new: dict[str, Any]) -> str:
    """`text` (whose data is `old`) changed to hold `new`, keeping its comments, order and layout.
    Raises whatever tomlkit raises; the result is to be checked with tomllib."""
    doc = tomlkit.parse(text)
    _apply(doc, old, new)
    out = tomlkit.dumps(doc)
    if text.endswith("\n") and not text.endswith("\n\n"):  # a removed last section leaves its blank line
        out = out.rstrip("\n") + "\n"
    return out


# ------------------------------------------------------------------------------------------ applying
def _body(table: Tableish) -> Container | None:
    """The container whose entries can be edited by hand; None for inline and split tables."""
    if isinstance(table, Table):
        return table.value
    if isinstance(table, Container):
        return table
    return None


def _apply(table: Tableish, old: dict[str, Any], new: dict[str, Any], inline: bool = False) -> None:
    """Edit `table` (holding `old`) to hold `new`. `inline`: it sits on key lines (an inline table, a
    dotted key's table), so what is new in it must too: a header there would capture the keys after it."""
    for key in [k for k in old if k not in new]:
        _remove(table, key)
    for key, value in new.items():
        if key not in old:
            _add(table, key, value, inline)
        elif not same(old[key], value):
            _change(table, key, old[key], value, inline)


def _dotted(table: Tableish, key: str) -> bool:
    """Whether `key` is written as a dotted key (`key.x = 1`) in `table`."""
    parts = table._tables if isinstance(table, OutOfOrderTableProxy) else [table]
    for part in parts:
        body = _body(part)
        if body is not None and any(k is not None and k.key == key and k.is_dotted() for k, _ in body.body):
            return True
    return False


def _change(table: Tableish, key: str, old: Any, value: Any, inline: bool) -> None:
    current = table[key]
    inner = inline or isinstance(current, InlineTable) or _dotted(table, key)
    if isinstance(old, dict) and value == {} and isinstance(current, (Table, OutOfOrderTableProxy)):
        _remove(table, key)  # emptied: a table written only through its sub-tables or dotted keys would vanish
        _add(table, key, value, inline)
    elif isinstance(old, dict) and isinstance(value, dict) and isinstance(current, (Table, InlineTable, OutOfOrderTableProxy)):
        _apply(current, old, value, inner)
    elif isinstance(current, AoT) and _is_tables(value):
        _apply_aot(current, old, value)
    elif isinstance(current, Array) and isinstance(value, (list, tuple)) and len(current) == len(value):
        _apply_array(current, old, value)
    elif isinstance(current, Array) and isinstance(value, (list, tuple)):
        array = _inline(value)
        if "\n" in current.as_string():  # written one element a line: keep it so
            array.multiline(True)
        table[key] = array
    elif inner or isinstance(current, Array):
        table[key] = _inline(value)
    else:
        table[key] = _block(value)


def _apply_array(array: Array, old: list[Any], new: list[Any] | tuple[Any, ...]) -> None:
    """Same length: each changed element replaced (or an inline table edited) where it stands."""
    for i, (was, value) in enumerate(zip(old, new, strict=True)):
        if same(was, value):
            continue
        current = array[i]
        if isinstance(was, dict) and isinstance(value, dict) and isinstance(current, InlineTable):
            _apply(current, was, value, inline=True)
        elif isinstance(was, list) and isinstance(value, list) and isinstance(current, Array) and len(was) == len(value):
            _apply_array(current, was, value)
        else:
            array[i] = _inline(value)


def _apply_aot(aot: AoT, old: list[Any], new: list[Any] | tuple[Any, ...]) -> None:
    """Tables edited by position; those past the new end removed with the comments above their
    headers; new ones appended as `[[...]]` blocks, spaced like the others."""
    common = min(len(old), len(new))
    for i in range(common):
        if not same(old[i], new[i]):
            _apply(aot[i], old[i], new[i])
    for i in range(len(old) - 1, common - 1, -1):
        if i > 0:
            for owner, j in _trailing_comments(aot[i - 1]):
                owner.body[j] = (None, Null())
        del aot[i]
    for value in new[common:]:
        previous = aot[-1] if len(aot) else None
        table = _table(value)
        if previous is not None and previous.as_string().endswith("\n\n"):
            table.value.append(None, tomlkit.nl())  # it is the last now: it keeps the blank line after the list
        elif previous is not None:
            table.trivia.indent = "\n"
        aot.append(table)


def _renders_header(key: Key | None, item: Item) -> bool:
    """A `[table]` or `[[table]]` header (not a dotted key's table, which sits among the keys)."""
    return isinstance(item, AoT) or (isinstance(item, Table) and not (key is not None and key.is_dotted()))


def _holds_header(table: Table) -> bool:
    """Whether a dotted key's table has something written under a header of its own."""
    return any(_renders_header(k, v) or isinstance(v, Table) and _holds_header(v) for k, v in table.value.body)


def _indices(body: Container, key: str) -> list[int]:
    return [i for i, (k, _) in enumerate(body.body) if k is not None and k.key == key]


def _comments_above(body: Container, index: int, header: bool) -> list[tuple[Container, int]]:
    """The comment lines right above entry `index` (no blank line between): its own comments. Above a
    `header`, they may sit at the end of the table before it."""
    found: list[tuple[Container, int]] = []
    entries = body.body
    j = index - 1
    while j >= 0:
        k, item = entries[j]
        if isinstance(item, Null):
            j -= 1
        elif isinstance(item, Comment):
            found.append((body, j))
            j -= 1
        elif header and _renders_header(k, item):
            inner = item[-1] if isinstance(item, AoT) and len(item) else item
            if isinstance(inner, Table):
                found.extend(_trailing_comments(inner))
            break
        else:
            break
    return found


def _trailing_comments(table: Table) -> list[tuple[Container, int]]:
    """The comment lines that end `table` with no blank line after them: they belong to the header
    that follows."""
    return _comments_above(table.value, len(table.value.body), True)


def _remove(table: Tableish, key: str) -> None:
    if isinstance(table, OutOfOrderTableProxy):  # written in parts: remove the key from each part holding it
        for part in table._tables:
            if key in part:
                _remove(part, key)
        return
    body = _body(table)
    if body is not None:
        for owner, j in [c for i in _indices(body, key) for c in _comments_above(body, i, _renders_header(*body.body[i]))]:
            owner.body[j] = (None, Null())
    del table[key]


def _ends_blank(item: Item) -> bool:
    return item.as_string().endswith("\n\n") or isinstance(item, Whitespace) and item.as_string().endswith("\n")


def _part_for(proxy: OutOfOrderTableProxy, item: Any) -> Tableish:
    """Which part of a table written in parts (split sections, dotted keys) takes a new `item`: a
    table, the last part; a value, the last part that has its own header or is dotted (a header-less
    part would need a second header of the same name)."""
    parts = [(k, v) for k, v in proxy._container.body if any(v is t for t in proxy._tables)]
    last = parts[-1][1] if parts else None
    if isinstance(item, (Table, AoT)) and isinstance(last, Table):
        return last
    for k, v in reversed(parts):
        if isinstance(v, Table) and (k is not None and k.is_dotted() or not v.is_super_table()):
            return v
    return proxy


def _add(table: Tableish, key: str, value: Any, inline: bool) -> None:
    inline = inline or isinstance(table, InlineTable)
    item = _inline(value) if inline else _block(value)
    if isinstance(table, OutOfOrderTableProxy):
        table = _part_for(table, item)
    body = _body(table)
    if body is None:
        table[key] = item
        return
    entries = body.body
    if isinstance(item, (Table, AoT)):
        # after the last entry, before the blank lines and comments that lead to the next section
        real = [i for i, (_, v) in enumerate(entries) if not isinstance(v, (Whitespace, Comment, Null))]
        at = real[-1] + 1 if real else len(entries)
        first = item if isinstance(item, Table) else item[0]
        if at < len(entries):
            if at > 0 and not _ends_blank(entries[at - 1][1]):
                first.trivia.indent = "\n"
            body._insert_at(at, key, item)
        else:
            ended_blank = bool(entries) and _ends_blank(entries[-1][1])
            body.append(key, item)
            last = item if isinstance(item, Table) else item[-1]
            if ended_blank and not last.as_string().endswith("\n\n"):
                last.value.append(None, tomlkit.nl())
        return
    last_key: Key | None = None
    previous: Item | None = None
    for k, v in entries:
        if _renders_header(k, v) or isinstance(v, Table) and _holds_header(v):
            break
        if k is not None:
            last_key, previous = k, v
    if last_key is None:
        table[key] = item
        return
    if not isinstance(previous, Table):
        item.trivia.indent = previous.trivia.indent if previous is not None else ""
    body._insert_after(last_key, key, item)
