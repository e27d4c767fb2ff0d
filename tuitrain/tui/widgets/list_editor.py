"""A list of strings or numbers in the profile editor (metrics.names, model.class_weights, fsdp's
transformer_layer_cls_to_wrap, …): one item a row, typed bare (or picked, where the key has choices),
a − button beside each and + add underneath. It reports the list as it now stands (Changed), empty
items left out; the row around it turns that into the key's value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Select

from tuitrain.tui.fields import REMOVE, parse_value
from tuitrain.tui.plain import plain
from tuitrain.tui.widgets.field import Field


def item_text(value: Any) -> str:
    """An item as typed: text bare, a number as written."""
    if isinstance(value, float):
        return repr(value)
    return str(value)


class ListEditor(Vertical):
    DEFAULT_CSS = """
    ListEditor { height: auto; }
    ListEditor > .list-item { height: auto; }
    ListEditor > .list-item > Input, ListEditor > .list-item > Select { width: 1fr; }
    ListEditor > .list-item > Button { margin-left: 1; min-width: 3; }
    ListEditor > .list-add { margin-top: 0; }
    """

    class Changed(Message):
        """The list now holds `values` (empty items left out)."""

        def __init__(self, editor: "ListEditor", values: list[Any]) -> None:
            super().__init__()
            self.editor = editor
            self.values = values

    def __init__(self, item_kind: str, values: Sequence[Any], choices: Sequence[Any] | None = None,
                 placeholder: str = "", tooltip: str | None = None, classes: str = "") -> None:
        """`item_kind`: "str" or "float" (how a typed item is read); `choices`: items are picked from these."""
        super().__init__(classes=classes)
        self.item_kind = item_kind
        self.choices = tuple(choices or ())
        self.placeholder = placeholder
        self.tooltip = plain(tooltip) if tooltip else None
        self._initial = list(values)
        self._last = list(values)

    def compose(self) -> ComposeResult:
        for value in self._initial:
            yield self._item(value)
        yield Button("+ add", classes="list-add", compact=True, tooltip="Add an item at the end")

    def _item(self, value: Any) -> Horizontal:
        control: Input | Select[Any]
        if self.choices and (value is None or value in self.choices):
            control = Select([(plain(c), c) for c in self.choices], value=Select.NULL if value is None else value,
                             allow_blank=True, prompt="(pick one)", compact=True)
        else:
            kinds: dict[str, Literal["number", "text"]] = {"float": "number"}
            control = Field("" if value is None else item_text(value), compact=True,
                            placeholder=self.placeholder or "an item", type=kinds.get(self.item_kind, "text"),
                            valid_empty=True)
        return Horizontal(control, Button("−", classes="list-remove", compact=True, tooltip="Remove this item"),
                          classes="list-item")

    @property
    def values(self) -> list[Any]:
        """The items as they stand, empty ones left out."""
        out: list[Any] = []
        for item in self.query(".list-item").results(Horizontal):
            control = item.children[0]
            if isinstance(control, Select):
                if control.value is not Select.NULL:
                    out.append(control.value)
            elif isinstance(control, Input):
                value = parse_value(self.item_kind, control.value)
                if value is not REMOVE:
                    out.append(value)
        return out

    def _report(self) -> None:
        values = self.values
        if values != self._last:
            self._last = values
            self.post_message(self.Changed(self, values))

    @on(Input.Changed)
    @on(Select.Changed)
    def _item_changed(self, event: Input.Changed | Select.Changed) -> None:
        event.stop()
        self._report()

    @on(Button.Pressed, ".list-add")
    async def _add(self, event: Button.Pressed) -> None:
        event.stop()
        item = self._item(None)
        await self.mount(item, before=event.button)
        item.children[0].focus()

    @on(Button.Pressed, ".list-remove")
    async def _remove(self, event: Button.Pressed) -> None:
        event.stop()
        item = event.button.parent
        if not isinstance(item, Horizontal):
            return
        items = list(self.query(".list-item").results(Horizontal))
        at = items.index(item) if item in items else 0
        await item.remove()
        self._report()
        left = list(self.query(".list-item").results(Horizontal))
        (left[min(at, len(left) - 1)].children[0] if left else self.query_one(".list-add")).focus()
