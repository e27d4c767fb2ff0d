"""Moved (issue 12): the export is `launch/accelerate_export.py`, the default config's place
`launch/accelerate_default_config.py`, the vocabulary, canonical form and import live in
`profile/accelerate_names.py`, `profile/accelerate_canonical.py` and `profile/accelerate_import.py`.

Only the names `launch/plan.py` still imports from here are kept; this file goes once it imports
them from their homes."""

from tuitrain.launch.accelerate_default_config import default_config_path
from tuitrain.launch.accelerate_export import deepspeed_section, fsdp_section
from tuitrain.profile.accelerate_names import CPU_RANKS_MARK

__all__ = ["CPU_RANKS_MARK", "deepspeed_section", "default_config_path", "fsdp_section"]
