"""Profiles: TOML files that describe a training run (read, validate, write).

Only the standard library and tomli_w are imported here: never torch, transformers, datasets,
evaluate or accelerate (the TrainingArguments table comes from a cached subprocess).
"""

from .load import load_profile
from .lookup import builtin_profile_path, list_profiles, resolve_profile_path
from .overrides import apply_overrides, parse_override
from .problems import Problem, ProfileError
from .save import save_profile
from .schema import Profile, settings_with_defaults
from .settings import Settings
from .training_args import FieldSpec, training_args_fields
from .validate import validate_profile

__all__ = [
    "FieldSpec",
    "Problem",
    "Profile",
    "ProfileError",
    "Settings",
    "apply_overrides",
    "builtin_profile_path",
    "list_profiles",
    "load_profile",
    "parse_override",
    "resolve_profile_path",
    "save_profile",
    "settings_with_defaults",
    "training_args_fields",
    "validate_profile",
]
