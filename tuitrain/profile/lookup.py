"""Finding a profile by name: ./profiles/<name>.toml first, then the ones shipped with tuitrain;
a path is itself. A name or path that finds nothing is an error naming the closest known ones."""

from __future__ import annotations

from pathlib import Path

from .problems import Problem, ProfileError, did_you_mean

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "profiles"


def _stems(folder: Path) -> list[str]:
    try:
        return sorted(p.stem for p in folder.glob("*.toml") if p.is_file())
    except OSError:
        return []


def list_profiles(cwd: Path | None = None) -> dict[str, Path]:
    """Profiles known by bare name: ./profiles/*.toml first, then the built-in ones."""
    found: dict[str, Path] = {}
    for folder in ((cwd or Path.cwd()) / "profiles", BUILTIN_DIR):
        for stem in _stems(folder):
            found.setdefault(stem, folder / f"{stem}.toml")
    return found


def builtin_profile_path(name: str = "demo") -> Path:
    """The path of a profile shipped with tuitrain (tuitrain/profiles/<name>.toml)."""
    path = BUILTIN_DIR / f"{name}.toml"
    if not path.is_file():
        known = _stems(BUILTIN_DIR)
        raise ProfileError([Problem(name, "", "no such built-in profile",
                                    did_you_mean(name, known) or f"built-in profiles: {', '.join(known)}")])
    return path


def is_bare_name(ref: str) -> bool:
    """A profile named, not a path: "demo" (no .toml, no folder), looked up in ./profiles."""
    return bool(ref) and not ref.endswith(".toml") and "/" not in ref and "\\" not in ref


def resolve_profile_path(ref: str, cwd: Path | None = None) -> Path:
    """A profile reference -> its file.

    An existing file is itself; a bare name ("demo", no .toml, no folder) is looked up as
    ./profiles/<name>.toml, then as a built-in profile. A folder is an error listing its .toml
    files; anything else is an error naming the closest known profiles.
    """
    cwd = cwd or Path.cwd()
    given = Path(ref).expanduser()
    full = given if given.is_absolute() else cwd / given
    if full.is_file():
        return full
    if is_bare_name(ref):
        known = list_profiles(cwd)
        if ref in known:
            return known[ref]
        if full.is_dir():  # "." or a folder named without a slash
            raise ProfileError([folder_problem(full, ref)])
        hint = did_you_mean(ref, known) or (f"known profiles: {', '.join(known)}" if known else None)
        raise ProfileError([Problem(ref, "", "no such profile", hint)])
    raise ProfileError([missing_file_problem(full, ref)])



def folder_problem(full: Path, label: str) -> Problem:
    """A folder given where a profile is wanted: the .toml files in it (or in its profiles/) are the fix."""
    for folder in (full, full / "profiles"):
        known = _stems(folder)
        if known:
            shown = [str(Path(label) / f"{k}.toml") if folder == full else str(Path(label) / "profiles" / f"{k}.toml")
                     for k in known]
            listed = ", ".join(shown[:8]) + (f", … ({len(shown) - 8} more)" if len(shown) > 8 else "")
            return Problem(label, "", f"is a folder, not a profile; profiles in it: {listed}", "give one of them")
    return Problem(label, "", "is a folder, not a profile, and holds no .toml file",
                   "give a profile file (e.g. profiles/my-run.toml), or a name such as demo")


def missing_file_problem(full: Path, label: str) -> Problem:
    if full.is_dir():
        return folder_problem(full, label)
    if not full.parent.is_dir():
        return Problem(label, "", "no such profile", f"the folder {full.parent} does not exist")
    known = _stems(full.parent)
    hint = did_you_mean(full.stem, known, fmt="'{}.toml'")
    if hint is None and known:
        hint = "profiles there: " + ", ".join(f"{k}.toml" for k in known)
    return Problem(label, "", "no such profile", hint)
