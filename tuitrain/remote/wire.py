"""What a home supervisor and a node agent say to each other over ssh's stdin and stdout.

One message per line, a JSON object with a type `t`; file bytes travel base64-encoded, so a log holding any
bytes at all (tqdm's carriage returns, colours, broken UTF-8) arrives as written. Lines are short (a chunk is at
most CHUNK bytes before encoding), so neither side ever needs more than one line in memory.

Home → node: setup (first, once), control (a request name), terminate (why), beat.
Node → home: hello, append (bytes to add to a file), file (a small file's whole new content), status, consumed
(a control request the ranks acted on), end (the node's outcome), beat.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import IO, Any

CHUNK = 192 * 1024
BEAT_SECONDS = 1.0  # each side says something at least this often
SILENCE_SECONDS = 10.0  # a side that hears nothing for this long takes the link as lost


class WireError(Exception):
    """A line that is no message of ours (a shell's welcome text, a truncated line)."""


def encode(kind: str, **fields: Any) -> bytes:
    return (json.dumps({"t": kind, **fields}, separators=(",", ":")) + "\n").encode()


def encode_bytes(kind: str, path: str, data: bytes, **fields: Any) -> bytes:
    return encode(kind, path=path, data=base64.b64encode(data).decode("ascii"), **fields)


def decode(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError as exc:
        raise WireError(f"not a message: {line[:120]!r}") from exc
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise WireError(f"not a message: {line[:120]!r}")
    return message


def data_of(message: dict[str, Any]) -> bytes:
    return base64.b64decode(message.get("data") or b"")


def send(stream: IO[bytes], message: bytes) -> bool:
    """Write one message; False when the other side is gone (a closed pipe)."""
    try:
        stream.write(message)
        stream.flush()
    except (BrokenPipeError, ValueError, OSError):
        return False
    return True


def write_into(target: Path, message: dict[str, Any]) -> None:
    """Write one `append` (bytes added at the end) or `file` (the whole file, replaced atomically: JSON, text)
    message at `target`; the caller has checked that its path may be written."""
    from tuitrain.atomic import write_text_atomic

    target.parent.mkdir(parents=True, exist_ok=True)
    data = data_of(message)
    if message["t"] == "append":
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    else:
        write_text_atomic(target, data.decode("utf-8", "replace"))
