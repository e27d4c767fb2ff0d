"""Word in the terminal where the app is open ([notify] terminal = true): the bell, and a desktop notification
by the escape sequences terminals turn into one (OSC 9: iTerm2, Windows Terminal, kitty, WezTerm; OSC 777:
VTE terminals such as GNOME Terminal, foot). They travel over SSH as any output does; inside tmux they are
wrapped for its passthrough (tmux's `allow-passthrough on` lets them out)."""

from __future__ import annotations

import re
from typing import Mapping

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _clean(text: str, limit: int = 200) -> str:
    """One line of printable text: no escape or control character can end the sequence early."""
    return _CONTROL.sub(" ", text).strip()[:limit]


def terminal_alert(title: str, body: str, environ: Mapping[str, str]) -> str:
    """The bell, then OSC 9 (the body, titled) and OSC 777 (title and body), for the terminal `environ` describes."""
    title, body = _clean(title, 60), _clean(body)
    osc = f"\x1b]9;{title}: {body}\x07\x1b]777;notify;{title.replace(';', ',')};{body.replace(';', ',')}\x07"
    if environ.get("TMUX"):
        osc = "\x1bPtmux;" + osc.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return "\x07" + osc
