"""A command line shown in a narrow pane as a reader expects: folded between its words where it can, a word longer
than a line cut into whole lines, and never a quoted word's closing quote (nor any last character) alone on a line
of its own, which reads as an empty argument. Rich folds a long word at the edge, wherever that falls."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.text import Text

# a shell word as shlex.quote writes one, its quoted parts whole (an unbalanced quote: the rest of the line)
WORD = re.compile(r"""(?:'[^']*'|"[^"]*"|[^ '"])+|['"].*$""")


def fold_command(command: str, width: int) -> list[str]:
    """`command`'s lines (each of its own lines folded) in at most `width` cells (at least 2)."""
    return [folded for line in command.split("\n") for folded in _fold_line(line, max(2, width))]


def _fold_line(command: str, width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in WORD.findall(command) or [command]:
        if line and len(line) + 1 + len(word) <= width:
            line += " " + word
            continue
        if line:
            lines.append(line)
        line = word
        while len(line) > width:
            cut = width - 1 if len(line) == width + 1 else width  # its last piece keeps two characters
            lines.append(line[:cut])
            line = line[cut:]
    lines.append(line)
    return lines


class WithCommands:
    """Text and command lines one after another (a command: a str, folded by `fold_command`, each line with
    `indent` before it); `str()` of it is its plain text, as a Text's is."""

    def __init__(self, parts: Sequence[Text | str], indent: str = "") -> None:
        self.parts = list(parts)
        self.indent = indent

    def __str__(self) -> str:
        return "".join(part.plain if isinstance(part, Text) else f"{self.indent}{part}\n" for part in self.parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        for part in self.parts:
            if isinstance(part, Text):
                shown = part.copy()
                shown.end = ""
                yield shown
            else:
                for line in fold_command(part, options.max_width - len(self.indent)):
                    yield Text(self.indent + line)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(options.max_width, 2 + len(self.indent)), options.max_width)
