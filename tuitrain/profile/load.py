"""Reading profiles: parse the TOML, migrate renamed keys, apply --set overrides (overrides.py),
validate, and place each problem at its line in the file. Finding a profile by name: lookup.py."""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Sequence

from .lookup import folder_problem, missing_file_problem
from .overrides import apply_overrides, migrated_override, parse_override
from .problems import Problem, ProfileError
from .schema import Profile
from .training_args import FieldSpec, training_args_fields
from .training_migrations import applicable_migration
from .validate import validate_profile
from .values import toml_literal

__all__ = ["key_locations", "load_profile", "locate", "migrate", "parse_toml", "read_profile_text"]


# --------------------------------------------------------------------------- TOML text

_ERR_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_ERR_END = re.compile(r"\s*\(at end of document\)\s*$")


def parse_toml(text: str, file: str) -> dict[str, Any]:
    """tomllib.loads, with a syntax error turned into a ProfileError at its line and column."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        line: int | None = None
        column: int | None = None
        if m := _ERR_AT.search(message):
            line, column = int(m.group(1)), int(m.group(2))
            message = message[: m.start()]
        elif m := _ERR_END.search(message):
            lines = text.split("\n")
            line, column = len(lines), len(lines[-1]) + 1
            message = message[: m.start()] + " (at end of file)"
        fix = None
        if message.startswith("Invalid value"):
            fix = 'text values need quotes, e.g. name = "my-run"; true/false are lower case'
        elif message.startswith("Cannot declare") or message.startswith("Cannot overwrite"):
            fix = "each table and key may appear only once"
        elif message.startswith("Unterminated string"):
            fix = "close the string with the same quote it opens with"
        raise ProfileError([Problem(file, "", f"TOML syntax error: {message}", fix,
                                    line=line, column=column)]) from None


_BARE_OR_QUOTED = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_HEADER = re.compile(r"^\s*\[\[?\s*(" + _BARE_OR_QUOTED + r"(?:\s*\.\s*" + _BARE_OR_QUOTED + r")*)\s*\]\]?")
_KEYLINE = re.compile(r"^(\s*)(" + _BARE_OR_QUOTED + r"(?:\s*\.\s*" + _BARE_OR_QUOTED + r")*)\s*=")
_PART = re.compile(_BARE_OR_QUOTED)


def _parts(dotted: str) -> list[str]:
    out = []
    for part in _PART.findall(dotted):
        if part[:1] in "\"'":
            part = part[1:-1]
        out.append(part)
    return out


def key_locations(text: str) -> dict[str, tuple[int, int]]:
    """Dotted key -> (line, column) of where it is written (table headers included).

    A light scan, good for pointing at lines: it follows [table] headers and `key =` lines and
    skips multi-line strings; keys inside inline tables map to their parent's line. An item of an
    array of tables is named by its index too ("distributed.machines[1].host"), the name without
    it standing for the first.
    """
    found: dict[str, tuple[int, int]] = {}
    prefix: list[str] = []
    items: dict[str, int] = {}  # [[array]] headers seen so far, by name
    in_multiline: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        if in_multiline:
            if line.count(in_multiline) % 2 == 1:
                in_multiline = None
            continue
        if m := _HEADER.match(line):
            prefix = _parts(m.group(1))
            found.setdefault(".".join(prefix), (number, line.index("[") + 1))
            if line.lstrip().startswith("[["):
                name = ".".join(prefix)
                items[name] = items.get(name, -1) + 1
                prefix = prefix[:-1] + [f"{prefix[-1]}[{items[name]}]"]
                found.setdefault(".".join(prefix), (number, line.index("[") + 1))
        elif m := _KEYLINE.match(line):
            dotted = ".".join(prefix + _parts(m.group(2)))
            found.setdefault(dotted, (number, len(m.group(1)) + 1))
            found.setdefault(re.sub(r"\[\d+\]", "", dotted), (number, len(m.group(1)) + 1))
            rest = line[m.end():]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_multiline = quote
                    break
    return found


def _written_at(key: str, places: Mapping[str, tuple[int, int]], aliases: Mapping[str, str]) -> tuple[int, int] | None:
    """Where `key`, or the nearest table above it, is written."""
    parts = key.split(".")
    while parts:
        dotted = ".".join(parts)
        hit = places.get(aliases.get(dotted, dotted))
        if hit:
            return hit
        parts.pop()
    return None


def from_set(key: str, overridden: Sequence[str], written: Callable[[str], bool]) -> bool:
    """Whether a problem about `key` comes from a --set of one of the `overridden` dotted keys: the key itself, a
    key inside it, or a table the override made (`--set training.foo.bar=1` makes training.foo, which the file,
    as `written` tells, does not hold)."""
    if not key:
        return False
    bare = re.sub(r"\[\d+\]", "", key)
    return any(key == s or key.startswith((s + ".", s + "[")) or (s.startswith(bare + ".") and not written(bare))
               for s in overridden)


def locate(problems: Sequence[Problem], text: str, skip: Sequence[str] = (),
           aliases: Mapping[str, str] | None = None) -> list[Problem]:
    """Fill in line/column for problems whose key (or a parent of it) is written in `text`.

    Keys in `skip` (set by --set overrides) get no line but a "(from --set)" mark (from_set says which);
    `aliases` maps a migrated key to the name written in the file.
    """
    places = key_locations(text)
    aliases = aliases or {}
    out: list[Problem] = []
    for p in problems:
        if from_set(p.key, skip, lambda key: aliases.get(key, key) in places):
            p = Problem(p.file, p.key, p.message + " (from --set)", p.fix, p.severity)
        elif p.line is None and p.key:
            hit = _written_at(p.key, places, aliases) or _written_at(re.sub(r"\[\d+\]", "", p.key), places, aliases)
            if hit:
                p = Problem(p.file, p.key, p.message, p.fix, p.severity, hit[0], hit[1])
        out.append(p)
    return out


def mark_overrides(problems: Sequence[Problem], overrides: Sequence[str], path: Path | None) -> list[Problem]:
    """Problems found after loading (a plan's, against this machine) marked as loading marks its own: a key set by
    one of the `overrides` gets "(from --set)", a key written in the profile at `path` its line."""
    keys = []
    for override in overrides:
        try:
            keys.append(".".join(parse_override(override)[0]))
        except ProfileError:
            continue  # refused while loading already
    try:
        text = path.read_text(encoding="utf-8") if path is not None else ""
    except (OSError, UnicodeDecodeError):
        text = ""
    return locate(problems, text, skip=keys)


def plan_problems(profile: Profile, problems: Sequence[Problem], overrides: Sequence[str]) -> list[Problem]:
    """What `plan`, `validate` and the launch dialog say after a plan: the profile's notes, less those the plan
    says again (the profile alone warns where the plan refuses: said once, as the error), then the plan's
    `problems`, marked as loading marks its own (mark_overrides)."""
    return notes_not_said_again(profile, problems) + mark_overrides(problems, overrides, profile.path)


def notes_not_said_again(profile: Profile, problems: Sequence[Problem]) -> list[Problem]:
    """The profile's notes less those a plan's `problems` say again (the profile alone warns where the plan
    refuses, e.g. several machines without main_process_port: said once, as the error)."""
    again = {(p.key, p.message) for p in problems}
    return [note for note in profile.notes if (note.key, note.message) not in again]


# --------------------------------------------------------------------------- migrations

def migrate(data: dict[str, Any], file: str,
            fields: Mapping[str, FieldSpec] | None) -> tuple[dict[str, Any], list[Problem]]:
    """Renamed and retired [training] keys moved to their new places (see training_migrations.MIGRATIONS).

    Returns a new dict and one Problem per move: a note, or an error when the new key is
    also given with a different value.
    """
    training = data.get("training")
    if not isinstance(training, dict) or not any(applicable_migration(k, fields) for k in training):
        return data, []
    new = copy.deepcopy(data)
    problems: list[Problem] = []
    rebuilt: dict[str, Any] = {}
    moved: list[tuple[str, str, Any]] = []
    for key, value in new["training"].items():
        m = applicable_migration(key, fields)
        if m is None:
            rebuilt[key] = value
            continue
        old = f"training.{key}"
        if m.new is None:
            problems.append(Problem(file, old, m.note, "remove it", severity="note"))
            continue
        section, leaf = m.new.split(".", 1)
        if section == "training":
            if leaf in new["training"] and new["training"][leaf] != value:
                problems.append(_conflict(file, old, m.new, value, new["training"][leaf]))
                continue
            rebuilt[leaf] = value
        else:
            moved.append((old, m.new, value))
        shown = '"***"' if "token" in m.new else toml_literal(value)
        problems.append(Problem(file, old, m.note, f"read as {m.new} = {shown}", severity="note"))
    new["training"] = rebuilt
    for old, dest, value in moved:
        section, leaf = dest.split(".", 1)
        target = new.setdefault(section, {})
        if not isinstance(target, dict):
            continue  # validation reports the bad section
        if leaf in target and target[leaf] != value:
            problems = [p for p in problems if p.key != old]
            problems.append(_conflict(file, old, dest, value, target[leaf]))
            continue
        target[leaf] = value
    return new, problems


def _migrated_names(data: Mapping[str, Any], fields: Mapping[str, FieldSpec] | None) -> dict[str, str]:
    """New dotted key -> the old dotted key written in the file."""
    training = data.get("training")
    out: dict[str, str] = {}
    if isinstance(training, dict):
        for key in training:
            m = applicable_migration(key, fields)
            if m is not None and m.new:
                out[m.new] = f"training.{key}"
    return out


def _conflict(file: str, old: str, new: str, value: Any, existing: Any) -> Problem:
    values = "" if "token" in new else f": {toml_literal(value)} vs {toml_literal(existing)}"
    return Problem(file, old, f"an old name for {new}, which is also given with another value{values}",
                   f"keep only {new}")


# --------------------------------------------------------------------------- load

def read_profile_text(path: Path, label: str) -> str:
    if not path.exists():
        raise ProfileError([missing_file_problem(path, label)])
    if path.is_dir():
        raise ProfileError([folder_problem(path, label)])
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ProfileError([Problem(label, "", f"cannot read: {exc.strerror or exc}")]) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ProfileError([Problem(label, "", "not UTF-8 text", "save the file as UTF-8",
                                    line=line, column=column)]) from None


def _by_line(p: Problem) -> tuple[int, int]:
    return (p.line if p.line is not None else 1 << 30, p.column or 0)


def load_profile(path: str | Path, overrides: Sequence[str] = (), *,
                 sections: Collection[str] | None = None) -> Profile:
    """Read, migrate, override and validate a profile file.

    Raises ProfileError listing every error at once (syntax errors stop at the first, as
    TOML parsing does). Warnings and notes are returned in `Profile.notes`. `sections`: only
    problems of these sections count (e.g. export-accelerate needs [hardware] and [distributed],
    not a data file that exists only on the cluster); None: all.
    """
    label = str(path)
    file_path = Path(path).expanduser()
    text = read_profile_text(file_path, label)
    data = parse_toml(text, label)
    fields = training_args_fields()
    aliases = _migrated_names(data, fields)
    data, notes = migrate(data, label, fields)

    override_notes: list[Problem] = []
    rewritten: list[str] = []
    bad: list[Problem] = []
    for text_override in overrides:
        try:
            new_text, found = migrated_override(text_override, fields)
        except ProfileError as exc:
            bad.extend(exc.problems)
            continue
        override_notes.extend(found)
        if new_text is not None:
            rewritten.append(new_text)
    if bad:
        raise ProfileError(bad)
    data = apply_overrides(data, rewritten)
    overridden = [".".join(parse_override(o)[0]) for o in rewritten]

    problems = validate_profile(data, label, file_path.resolve().parent, training_fields=fields)
    if sections is not None:
        problems = [p for p in problems if not p.key or p.key.split(".")[0] in sections]
    located = locate(notes + problems, text, skip=overridden, aliases=aliases)
    errors = sorted((p for p in located if p.severity == "error"), key=_by_line)
    if errors:
        raise ProfileError(errors)
    others = sorted((p for p in located if p.severity != "error"), key=_by_line)
    return Profile(path=file_path, data=data, notes=override_notes + others)
