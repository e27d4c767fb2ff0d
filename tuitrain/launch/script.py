"""Script mode: a profile's [script] as the program every rank runs, in place of tuitrain's engine.

Each rank finds tuitrain's hook through PYTHONPATH (a `sitecustomize` in tuitrain/script/site): it
writes the rank's log and record, and adds tuitrain's callbacks to every Trainer the script makes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from tuitrain.profile.settings import ScriptSettings, Settings
from tuitrain.rundir.script_env import SCRIPT_ENV

SITE_DIR = Path(__file__).resolve().parent.parent / "script" / "site"


def script_settings(settings: Settings) -> ScriptSettings | None:
    """[script], or None when tuitrain's engine trains."""
    script: ScriptSettings | None = settings.get("script") or None
    return script


def is_script(settings: Settings) -> bool:
    return script_settings(settings) is not None


def _absolute(raw: str, base_dir: Path) -> str:
    path = Path(raw).expanduser()
    return str(path if path.is_absolute() else (base_dir / path).resolve())


def resolved_script(script: ScriptSettings, base_dir: Path) -> ScriptSettings:
    """[script] with its path and workdir absolute: relative ones start from `base_dir` (the
    profile's folder), and the workdir is that folder when the profile names none."""
    out = ScriptSettings(**script)
    path, workdir = out.get("path"), out.get("workdir")
    if path:
        out["path"] = _absolute(path, base_dir)
    out["workdir"] = _absolute(workdir, base_dir) if workdir else str(base_dir)
    return out


def resume_args(script: Mapping[str, Any], checkpoint: Path | str) -> list[str]:
    """How the script is told to resume: `--resume_from_checkpoint PATH`, or `--opt=PATH` for a
    resume_arg ending in '='."""
    option = script.get("resume_arg") or "--resume_from_checkpoint"
    return [f"{option}{checkpoint}"] if option.endswith("=") else [option, str(checkpoint)]


def argv_resuming(argv: list[str], script: Mapping[str, Any], before: Path | str | None,
                  after: Path | str | None) -> list[str]:
    """A script's launch command told to resume from `after` (None: from the beginning) instead of `before`, the
    checkpoint it was told before (None: none): a restart's (tuitrain.runs.keeper.attempts)."""
    told = resume_args(script, before) if before is not None else []
    head = argv[:-len(told)] if told and argv[-len(told):] == told else list(argv)
    return head + (resume_args(script, after) if after is not None else [])


def script_program(script: Mapping[str, Any], resume_from: Path | str | None = None) -> list[str]:
    """What accelerate launch runs on each rank: the script (or `-m module`) and its arguments."""
    head = ["-m", script["module"]] if script.get("module") else [script["path"]]
    tail = resume_args(script, resume_from) if resume_from is not None else []
    return [*head, *[str(a) for a in script.get("args") or []], *tail]


def script_env(script: Mapping[str, Any], inherited_pythonpath: str | None) -> dict[str, str]:
    """The hook's folder first on PYTHONPATH (keeping the one tuitrain was started with), and the
    variable that tells the hook what the ranks run."""
    target = script.get("module") or script.get("path") or ""
    parts = [str(SITE_DIR), *([inherited_pythonpath] if inherited_pythonpath else [])]
    return {"PYTHONPATH": os.pathsep.join(parts), SCRIPT_ENV: str(target)}


def local_hook_path(pythonpath: str | None) -> str:
    """A PYTHONPATH planned on another machine, with this machine's hook folder in place of that one's
    (tuitrain may be installed elsewhere here)."""
    tail = os.path.join("tuitrain", "script", "site")
    kept = [p for p in (pythonpath or "").split(os.pathsep) if p and not p.rstrip(os.sep).endswith(tail)]
    return os.pathsep.join([str(SITE_DIR), *kept])


def script_note(script: Mapping[str, Any]) -> str:
    what = f"module {script['module']}" if script.get("module") else script["path"]
    return (f"script mode: each rank runs {what} in {script['workdir']}; tuitrain's hook (sitecustomize in "
            f"{SITE_DIR}, on PYTHONPATH) writes its log and adds tuitrain's callbacks to every Trainer it makes")
