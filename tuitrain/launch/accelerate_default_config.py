"""Where accelerate keeps the user's default config (what `accelerate config` writes and
`accelerate launch` reads without --config_file); the app offers to import it when it exists."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """accelerate's default config file (what `accelerate config` writes and `accelerate launch`
    reads when no --config_file is given): $HF_HOME/accelerate/default_config.yaml, HF_HOME
    defaulting to $XDG_CACHE_HOME/huggingface (~/.cache/huggingface). The legacy JSON is
    returned when it is the only one there."""
    env = os.environ if environ is None else environ
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    folder = Path(os.path.expanduser(home)) / "accelerate"
    yaml_file, json_file = folder / "default_config.yaml", folder / "default_config.json"
    return json_file if json_file.is_file() and not yaml_file.is_file() else yaml_file


def existing_default_config(environ: Mapping[str, str] | None = None) -> Path | None:
    """accelerate's default config when the user has one (for the app to offer importing it)."""
    path = default_config_path(environ)
    return path if path.is_file() else None


def config_to_import(ref: str, environ: Mapping[str, str] | None = None) -> tuple[Path, str | None]:
    """The accelerate config file to import: `ref` (a path), or for `default` (not a file of that name)
    accelerate's default config; and why it cannot be imported (None when it can)."""
    path = Path(ref).expanduser()
    if ref == "default" and not path.exists():
        path = default_config_path(environ)
        if not path.is_file():
            return path, f"accelerate has no default config here ({path}); nothing to import"
    if not path.is_file():
        return path, (f"{ref}: no such file" + (" (it is a folder)" if path.is_dir() else "")
                      + "; give an accelerate config YAML, or `default` for accelerate's default config")
    return path, None
