"""`tuitrain profile export-accelerate PROFILE` and `tuitrain profile import-accelerate FILE [--into PROFILE]`.

export: the accelerate config YAML a profile plans to, with no machine checks and only [hardware]
and [distributed] checked (write a cluster's config on a laptop; use it with any accelerate script).
import: an accelerate config (FILE, or `default` for accelerate's own default config) into the
[distributed] and [hardware] tables; every field that could not be mapped is named on stderr.
Without --into the tables are printed as TOML; with --into they replace [distributed] and set
the [hardware] keys of that profile (a bare name is ./profiles/NAME.toml, created when missing,
copied from the built-in profile of that name if there is one). The result is validated first:
if the tables would make the profile invalid, nothing is written.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from tuitrain.cli.errors import CliError
from tuitrain.cli.launching import say_when_reading_training_args
from tuitrain.launch.accelerate_default_config import config_to_import
from tuitrain.launch.plan import ACCELERATE_SECTIONS, accelerate_config_yaml
from tuitrain.profile import (
    Problem,
    ProfileError,
    list_profiles,
    load_profile,
    resolve_profile_path,
    save_profile,
    validate_profile,
)
from tuitrain.profile.accelerate_import import import_accelerate_file
from tuitrain.profile.lookup import is_bare_name


def cmd_profile(args: argparse.Namespace) -> int:
    say_when_reading_training_args()
    if args.action == "export-accelerate":
        if args.into:
            raise CliError("--into is for import-accelerate; export-accelerate prints the YAML (redirect it to a file)")
        return export_accelerate(args.file)
    return import_accelerate(args.file, args.into)


def export_accelerate(ref: str) -> int:
    # Only [hardware] and [distributed] are checked: a config for a cluster is written on a laptop,
    # where the cluster's data files and models need not exist.
    profile = load_profile(resolve_profile_path(ref), sections=ACCELERATE_SECTIONS)
    for note in profile.notes:
        print(note, file=sys.stderr)
    sys.stdout.write(accelerate_config_yaml(profile))
    return 0


def _source(ref: str) -> Path:
    path, problem = config_to_import(ref)
    if problem:
        raise CliError(problem)
    if path != Path(ref).expanduser():
        print(f"importing accelerate's default config {path}", file=sys.stderr)
    return path


def import_accelerate(ref: str, into: str | None) -> int:
    path = _source(ref)
    try:
        result = import_accelerate_file(path)
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: cannot read it: {exc}") from None
    _report(result.problems)
    if result.errors:
        return 1
    if into is None:
        sys.stdout.write(tomli_w.dumps(result.tables()))
        return 0
    target, existing, origin = _into_target(into)
    merged = result.merge_into(existing)
    base = target.resolve().parent
    before = {(p.key, p.message) for p in validate_profile(existing, str(target), base) if p.is_error} if existing else set()
    found = validate_profile(merged, str(target), base)
    if not existing:  # a new file has no [model] or [data] yet: only the imported tables can be wrong
        found = [p for p in found if not p.key or p.key.split(".")[0] in ACCELERATE_SECTIONS]
    new_errors = [p for p in found if p.is_error and (p.key, p.message) not in before]
    if new_errors:
        _report(new_errors)
        print(f"nothing written: with these tables {target} would not run (above). Fix those keys in {target} "
              "first, or run without --into to see the tables", file=sys.stderr)
        return 1
    if target.parent == Path("profiles") and not target.parent.is_dir():  # a bare name's ./profiles
        try:
            target.parent.mkdir()
        except OSError as exc:
            raise CliError(f"{target.parent.resolve()}: cannot create the folder ({exc.strerror or exc})") from None
    for warning in save_profile(merged, target):
        print(warning, file=sys.stderr)
    print(f"wrote [distributed] and [hardware] into {target}{origin}", file=sys.stderr)
    if not existing:
        print(f"{target} is new: add [model] and [data] (see `tuitrain plan demo` / profiles/demo.toml) before running it",
              file=sys.stderr)
        return 0
    _report(found)  # errors here were in the profile before the import
    return 1 if any(p.is_error for p in found) else 0


def _into_target(ref: str) -> tuple[Path, dict[str, Any], str]:
    """Where --into writes, what is there now, and a word on where it came from. A bare name
    ("mine") is ./profiles/mine.toml, as for every other command; a built-in name is copied there."""
    if not ref.strip():
        raise CliError("--into needs a profile name (./profiles/NAME.toml) or a path")
    given = Path(ref).expanduser()
    bare = is_bare_name(ref) and not given.is_file()
    target = Path("profiles") / f"{ref}.toml" if bare else given
    source = target
    origin = ""
    if bare and not target.is_file():
        builtin = list_profiles().get(ref)
        if builtin is not None and builtin.is_file():
            source, origin = builtin, f" (a copy of the built-in profile {ref})"
    if not source.exists():
        return target, {}, origin
    if source.is_dir():
        raise CliError(f"{source}: is a folder; give a profile file for --into")
    try:
        return target, tomllib.loads(source.read_text(encoding="utf-8")), origin
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CliError(f"{source}: cannot read it as TOML ({exc}); fix it or import into a new file") from None


def _report(problems: list[Problem]) -> None:
    for problem in problems:
        print(problem, file=sys.stderr)


__all__ = ["cmd_profile", "ProfileError"]
