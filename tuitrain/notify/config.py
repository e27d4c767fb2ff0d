"""[notify] of the user's settings file (`tuitrain.user_config`: $TUITRAIN_CONFIG, else
$XDG_CONFIG_HOME/tuitrain/config.toml, else ~/.config/...): checked in one place. A bad value is a ProfileError
naming the file, the key and the fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from tuitrain.profile.problems import Problem, ProfileError
from tuitrain.user_config import UserConfigError, config_path, read_user_config

# hung: found hung, still running; restarted: an attempt ended and the run starts again ([run] restarts)
ENDINGS = ("finished", "failed", "stopped", "killed", "lost", "cancelled", "hung", "restarted")
DEFAULT_ON = ("finished", "failed", "stopped", "lost", "hung", "restarted")
FORMATS = ("json", "slack")
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 120.0
KEYS = ("on", "webhook", "format", "command", "timeout", "terminal")


@dataclass(frozen=True)
class NotifyConfig:
    on: tuple[str, ...] = DEFAULT_ON
    webhook: str | None = None  # holds a token: never written into a run directory
    format: str = "json"
    command: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    terminal: bool = False  # the bell and a desktop notification where the app is open (notify.terminal)
    file: str = ""

    @property
    def any(self) -> bool:
        return bool(self.webhook or self.command)


@dataclass(frozen=True)
class _Reader:
    file: str
    problems: list[Problem] = field(default_factory=list)

    def bad(self, key: str, message: str, fix: str) -> None:
        self.problems.append(Problem(self.file, f"notify.{key}" if key else "notify", message, fix))


def _on(reader: _Reader, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        reader.bad("on", f"must be a list of run endings, not {value!r}", f"e.g. on = {list(DEFAULT_ON)!r}".replace("'", '"'))
        return DEFAULT_ON
    unknown = [v for v in value if v not in ENDINGS]
    if unknown:
        reader.bad("on", f"{', '.join(map(repr, unknown))} is not a run ending", f"use any of {', '.join(ENDINGS)}")
    return tuple(v for v in value if v in ENDINGS)


def _webhook(reader: _Reader, value: Any) -> str | None:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        reader.bad("webhook", "must be an http:// or https:// URL", 'e.g. webhook = "https://hooks.slack.com/services/…"')
        return None
    return value


def _command(reader: _Reader, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        reader.bad("command", f"must be a list of arguments (argv, never a shell string), not {value!r}",
                   'e.g. command = ["notify-send", "tuitrain"]; the run\'s facts are in TUITRAIN_* variables')
        return ()
    return tuple(value)


def _timeout(reader: _Reader, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT:
        reader.bad("timeout", f"must be a number of seconds above 0 and at most {MAX_TIMEOUT:.0f}, not {value!r}",
                   f"e.g. timeout = {DEFAULT_TIMEOUT:.0f}")
        return DEFAULT_TIMEOUT
    return float(value)


def _terminal(reader: _Reader, value: Any) -> bool:
    if not isinstance(value, bool):
        reader.bad("terminal", f"must be true or false, not {value!r}",
                   "terminal = true rings the bell and shows a desktop notification where the app is open")
        return False
    return value


def notify_config(data: Mapping[str, Any], file: str) -> NotifyConfig:
    """The [notify] table of a parsed config file (ProfileError on a bad value)."""
    table = data.get("notify")
    if table is None:
        return NotifyConfig(file=file)
    reader = _Reader(file)
    if not isinstance(table, dict):
        reader.bad("", "must be a table", "write it as a [notify] section")
        raise ProfileError(reader.problems)
    for key in table:
        if key not in KEYS:
            reader.bad(key, "is not a [notify] key", f"use {', '.join(KEYS)}")
    fmt = table.get("format", "json")
    if fmt not in FORMATS:
        reader.bad("format", f"{fmt!r} is not a format", 'use "json" (the run\'s facts) or "slack" (Slack/Discord {"text": …})')
    config = NotifyConfig(
        on=_on(reader, table["on"]) if "on" in table else DEFAULT_ON,
        webhook=_webhook(reader, table["webhook"]) if "webhook" in table else None,
        format=fmt if fmt in FORMATS else "json",
        command=_command(reader, table["command"]) if "command" in table else (),
        timeout=_timeout(reader, table["timeout"]) if "timeout" in table else DEFAULT_TIMEOUT,
        terminal=_terminal(reader, table["terminal"]) if "terminal" in table else False,
        file=file,
    )
    if reader.problems:
        raise ProfileError(reader.problems)
    return config


def read_notify_config() -> NotifyConfig:
    """The user's [notify] (the user's settings file: `tuitrain.user_config`), or an empty one where there is none."""
    path = config_path()
    try:
        data = read_user_config(path)
    except UserConfigError as exc:
        raise ProfileError([Problem(str(path), "", str(exc).removeprefix(f"{path}: "), "fix the file")]) from exc
    return notify_config(data, str(path))
