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
