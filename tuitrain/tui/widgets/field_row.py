"""One profile key in the editor: its name, the widget that fits its kind, a dim line with its
one-line help and its default (`show_help=False`: the help as a tooltip instead, for long forms
of self-explanatory keys), and the validator's words about it underneath.

kind: "choice" (a Select of `choices`; blank = the default), "bool" (a Select of true/false),
"int" / "float" (an Input that accepts numbers only), "str" (an Input), "literal" (an Input
holding a TOML value: lists, tables, anything else; text in it needs no quotes), "list[str]" /
"list[float]" (a ListEditor: an item a row, picked from `choices` where there are some; a value that
is not a list falls back to a "literal" Input, so it can be seen and fixed). An empty value (an
emptied list) removes the key (the default applies), which is how a profile that names only what it
changes stays small.
"""

from __future__ import annotations

from typing import Any, Literal

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, Select, Static

from tuitrain.profile.values import toml_literal
from tuitrain.tui.fields import NO_EXAMPLE, REMOVE, FieldDef, example_value, list_item_kind, parse_value, reads_back_bare
from tuitrain.tui.plain import escaped, plain
from tuitrain.tui.widgets.field import Field
from tuitrain.tui.widgets.list_editor import ListEditor
from tuitrain.tui.widgets.words import Words

__all__ = ["REMOVE", "FieldDef", "FieldRow", "help_line", "parse_value", "show_default", "show_value"]


def show_default(value: Any) -> str:
    """A default as the user would pick or type it: text bare, anything else as TOML."""
    return value if isinstance(value, str) else toml_literal(value)


def help_line(field: FieldDef) -> str:
    """The line shown under a field: its help, then its default where it has one. A help that is the key's
    example ('train_file = "data/train.csv"', which reads like the field's value) says it is one:
    'e.g. data/train.csv', as it would be typed in the field."""
    default = f"default: {show_default(field.default)}" if field.default not in (None, "") else ""
    example = example_value(field)
    doc = f"e.g. {show_value(field.kind, example)}" if example is not NO_EXAMPLE else field.doc
    if doc and default:
        return f"{doc} ({default})"
    return doc or default


def show_value(kind: str, value: Any) -> str:
    if value is None or value is REMOVE:
        return ""
    if kind == "str" and isinstance(value, str):
        return value
    if kind in ("int", "float") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str) and (kind != "literal" or reads_back_bare(value)):
        return value  # text without TOML quotes, wherever it reads back the same
    return toml_literal(value)


class FieldRow(Vertical):
    DEFAULT_CSS = """
    FieldRow { height: auto; padding: 0 1 0 0; border-left: blank; }
    FieldRow:focus-within { border-left: thick $accent; background: $accent 12%; }
    FieldRow:focus-within .field-name { text-style: bold reverse; }
    FieldRow > Horizontal { height: auto; }
    FieldRow .field-name { width: 30; padding-top: 0; color: $text; }
    FieldRow .field-control { width: 1fr; }
    FieldRow .field-help { color: $text-muted; height: auto; padding-left: 2; }
    FieldRow .field-error { color: $text-error; height: auto; padding-left: 30; }
    FieldRow .field-error.-empty { display: none; }
    FieldRow .field-note { color: $text-warning; height: auto; padding-left: 30; }
    FieldRow .field-note.-empty { display: none; }
    FieldRow.-invalid .field-name { color: $text-error; text-style: bold; }
    """

    class Changed(Message):
        """A field's value changed (REMOVE: the key is to be removed)."""

        def __init__(self, row: "FieldRow", value: Any) -> None:
            super().__init__()
            self.row = row
            self.value = value

    def __init__(self, field: FieldDef, value: Any, label: str | None = None, show_help: bool = True) -> None:
        super().__init__()
        self.field = field
        self.initial = value
        self.label = label or field.path[-1]
        self.show_help = show_help
        self._quiet = True
        self._error = ""
        self._note = ""

    def compose(self) -> ComposeResult:
        f = self.field
        with Horizontal():
            yield Label(self.label, classes="field-name", markup=False)
            yield self._control(f)
        if self.show_help and self.help_text:
            yield Words(self.help_text, classes="field-help")
        yield Words(self._note, classes="field-note" + ("" if self._note else " -empty"))
        yield Words(self._error, classes="field-error" + ("" if self._error else " -empty"))

    @property
    def help_text(self) -> str:
        return help_line(self.field)

    def _control(self, f: FieldDef) -> Select[Any] | Input | ListEditor:
        doc = None if self.show_help else (f.doc or None)  # the help as a tooltip instead of a line
        placeholder = (f"default: {show_default(f.default)}" if f.default not in (None, "")
                       else (doc or "not set"))
        item_kind = list_item_kind(f.kind)
        if item_kind and (self.initial is None or isinstance(self.initial, list)):
            return ListEditor(item_kind, self.initial or [], f.choices, classes="field-control", tooltip=doc)
        if f.kind in ("choice", "bool"):
            choices = (True, False) if f.kind == "bool" else (f.choices or ())
            value = self.initial if self.initial in choices else Select.NULL
            return Select([(plain(show_default(c)), c) for c in choices], value=value, allow_blank=True,
                          prompt=escaped(f"({placeholder})"), compact=True, classes="field-control",
                          tooltip=plain(doc) if doc else None)
        input_types: dict[str, Literal["integer", "number", "text"]] = {"int": "integer", "float": "number"}
        input_type = input_types.get(f.kind, "text")
        # valid_empty: an empty box means "the default", not a bad number
        return Field(show_value(f.kind, self.initial), placeholder=placeholder, type=input_type, compact=True,
                     classes="field-control", tooltip=plain(doc) if doc else None, valid_empty=True)

    def on_descendant_focus(self) -> None:
        """Scroll the whole row into view, help line and error included, not just its control."""
        self.call_after_refresh(self.scroll_visible, animate=False)

    def on_mount(self) -> None:
        self.call_after_refresh(self._arm)

    def _arm(self) -> None:
        self._quiet = False

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if not self._quiet:
            self.post_message(self.Changed(self, parse_value(self.field.kind, event.value)))

    @on(ListEditor.Changed)
    def _list_changed(self, event: ListEditor.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self, event.values or REMOVE))

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if not self._quiet:
            value = REMOVE if event.value is Select.NULL else event.value
            self.post_message(self.Changed(self, value))

    def set_error(self, message: str | None) -> None:
        """The validator's words about this key; kept until the row is composed when it is not yet."""
        if (message or "") == self._error:
            return  # each check asks every row again: an unchanged error costs no repaint
        self._error = message or ""
        for error in self.query(".field-error").results(Static):
            error.update(self._error)
            error.set_class(not self._error, "-empty")
        self.set_class(bool(message), "-invalid")

    @property
    def error(self) -> str:
        return self._error

    def set_note(self, note: str | None) -> None:
        """A word about this key that is no error (e.g. that the chosen model ignores it)."""
        if (note or "") == self._note:
            return  # each edit asks every row again (the editor's _show_ignored): an unchanged note costs no repaint
        self._note = note or ""
        for line in self.query(".field-note").results(Static):
            line.update(self._note)
            line.set_class(not self._note, "-empty")

    @property
    def note(self) -> str:
        return self._note
