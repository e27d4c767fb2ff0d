"""The user's own settings: `$TUITRAIN_CONFIG`, else `$XDG_CONFIG_HOME/tuitrain/config.toml` (default
`~/.config/tuitrain/config.toml`). Read on demand, never cached, so an open app sees an edit; a file that
cannot be read is one line naming it, the key and the fix."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from tuitrain.errors import TuitrainError

CONFIG_ENV = "TUITRAIN_CONFIG"


class UserConfigError(TuitrainError, ValueError):
    """The settings file is wrong: the message names the file, the key and the fix."""


def config_path() -> Path:
    named = os.environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "tuitrain" / "config.toml"


def read_user_config(path: Path | None = None) -> dict[str, Any]:
    """The settings as a mapping ({} when there is no file)."""
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UserConfigError(f"{path}: cannot be read ({exc.strerror}); fix its permissions or set "
                              f"{CONFIG_ENV} to another file") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserConfigError(f"{path}: not valid TOML ({exc}); fix the line it names") from exc
