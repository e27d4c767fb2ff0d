"""`tuitrain profile export-accelerate PROFILE` and `tuitrain profile import-accelerate FILE [--into PROFILE]`.

export: the accelerate config YAML a profile plans to, with no machine checks (write a cluster's
config on a laptop; use it with any accelerate script).
import: an accelerate config (FILE, or `default` for accelerate's own default config) into the
[distributed] and [hardware] tables; every field that could not be mapped is named on stderr.
Without --into the tables are printed as TOML; with --into they replace [distributed] and set
the [hardware] keys of that profile (created when missing), which is then validated.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from tuitrain.cli.errors import CliError
from tuitrain.launch.accelerate_yaml import default_config_path, import_accelerate_config, read_config_file
from tuitrain.yaml_text import dump as dump_yaml
from tuitrain.launch.plan import export_accelerate_config
from tuitrain.profile import (
    Problem,
    ProfileError,
    load_profile,
    profile_with_defaults,
    resolve_profile_path,
    save_profile,
    validate_profile,
)


def cmd_profile(args: argparse.Namespace) -> int:
    if args.action == "export-accelerate":
        if args.into:
            raise CliError("--into is for import-accelerate; export-accelerate prints the YAML (redirect it to a file)")
        return export_accelerate(args.file)
    return import_accelerate(args.file, args.into)


def export_accelerate(ref: str) -> int:
    profile = load_profile(resolve_profile_path(ref))
    for note in profile.notes:
        print(note, file=sys.stderr)
    config, header = export_accelerate_config(profile_with_defaults(profile), str(profile.path))
    sys.stdout.write(dump_yaml(config, header))
    return 0


def _source(ref: str) -> Path:
    path = Path(ref).expanduser()
    if ref == "default" and not path.exists():
        path = default_config_path()
        if not path.is_file():
            raise CliError(f"accelerate has no default config here ({path}); nothing to import")
        print(f"importing accelerate's default config {path}", file=sys.stderr)
    if not path.is_file():
        raise CliError(f"{ref}: no such file" + (" (it is a folder)" if path.is_dir() else "")
                       + "; give an accelerate config YAML, or `default` for accelerate's default config")
    return path


def import_accelerate(ref: str, into: str | None) -> int:
    path = _source(ref)
    try:
        raw = read_config_file(path)
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: cannot read it: {exc}") from None
    result = import_accelerate_config(raw, str(path), base_dir=path.parent)
    _report(result.problems)
    if result.errors:
        return 1
    if into is None:
        sys.stdout.write(tomli_w.dumps(result.tables()))
        return 0
    target = Path(into).expanduser()
    existing: dict[str, Any] = {}
    if target.exists():
        try:
            existing = tomllib.loads(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CliError(f"{target}: cannot read it as TOML ({exc}); fix it or import into a new file") from None
    merged = result.merge_into(existing)
    for warning in save_profile(merged, target):
        print(warning, file=sys.stderr)
    print(f"wrote [distributed] and [hardware] into {target}", file=sys.stderr)
    if not existing:
        print(f"{target} is new: add [model] and [data] (see `tuitrain plan demo` / profiles/demo.toml) before running it",
              file=sys.stderr)
        return 0
    found = validate_profile(merged, str(target), target.resolve().parent)
    _report(found)
    return 1 if any(p.severity == "error" for p in found) else 0


def _report(problems: list[Problem]) -> None:
    for problem in problems:
        print(problem, file=sys.stderr)


__all__ = ["cmd_profile", "ProfileError"]
