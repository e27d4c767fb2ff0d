"""Words from outside the app are shown as they are: a run's cause, a log line, a path, a host name, a profile's value,
what the user typed. Textual reads a `str` given to a widget as markup (`[b]`, `[@click=…]`) and raises MarkupError
on a closing tag that opens nothing (`no column [/data/train.csv:text]`), so the app keeps one rule:

- a toast is text, whoever asks for it (`TuitrainApp.notify` turns markup off, and cuts it to `TOAST_CHARS`);
- every Static, Label and OptionList is made with `markup=False`, every table is a `PlainTable`;
- a tab title, button label, select option or tooltip is our own constant words or `plain(...)`;
- our own styling is built from parts (`Text.assemble`, `Text.append`), never markup with words put in.

`tests/test_tui_plain_text.py` holds every file of `tuitrain/tui` to the rule and feeds generated words through each
path in a running app. Control characters are shown too, not sent to the terminal: an escape sequence in a cause
would move the cursor or recolour the screen (colours are dropped; any other control character is shown as its
Unicode picture, ␛ ␇)."""

from __future__ import annotations

import re
from typing import Iterable

from rich.text import Text
from textual.content import Content

# CSI (colours, cursor moves), OSC (titles, clipboard, links) and two-byte escapes, as a terminal reads them
ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline

TOAST_CHARS = 600  # a toast longer than this would cover the screen: the rest is where the toast's subject is
PANE_CHARS = 400  # one problem in an error pane: a pasted 3 kB value is named, not printed whole


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟
    return "␡" if code == 0x7F else "�"


def visible(text: object) -> str:
    """`text` as a string that a terminal shows as it is: escape sequences dropped, other control characters (but
    newline and tab) as their pictures."""
    words = str(text)
    if "\x1b" in words:
        words = ESCAPE_SEQUENCE.sub("", words)
    return CONTROL.sub(_picture, words)


def visible_text(text: Text) -> Text:
    """A Text built of words from outside (a cell, a header) with its control characters as pictures, one for one,
    so its styles stay where they were."""
    if not CONTROL.search(text.plain):
        return text
    shown = text.copy()
    shown.plain = CONTROL.sub(_picture, text.plain)
    return shown


def plain(text: object, style: str = "") -> Content:
    """Words from outside, for a widget that would read a `str` as markup: shown as they are (`visible`)."""
    content = Content(visible(text))
    return content.stylize(style) if style else content


def cut(text: str, limit: int = PANE_CHARS) -> str:
    """`text` up to `limit` characters, then how many more there were: a long paste or traceback named, not
    printed whole (the words around the cut stay readable: it is made at a space near the limit)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ", limit - 40)
    head = head[:space] if space > 0 else head
    return f"{head}… ({len(text) - len(head):,} more characters)"


def problem_lines(problems: Iterable[str]) -> str:
    """An error pane's lines, each cut at PANE_CHARS: a 3 kB value pasted into a field is named, not printed whole."""
    return "\n".join(cut(problem) for problem in problems)


def escaped(text: object) -> str:
    """Markup that reads as `text`, for the one kind of widget parameter that takes only a `str` and reads it as markup
    (a Select's prompt): elsewhere words go as `plain(...)`."""
    from rich.markup import escape

    return escape(visible(text))


def typed(text: str) -> str:
    """What a field keeps of typed or pasted text: escape sequences and control characters dropped (a field's value
    is painted as it is), a tab or newline a space."""
    if "\x1b" in text:
        text = ESCAPE_SEQUENCE.sub("", text)
    return CONTROL.sub("", text.replace("\t", " ").replace("\n", " ")) if CONTROL.search(text) or "\n" in text else text
