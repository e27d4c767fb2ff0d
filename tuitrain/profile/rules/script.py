"""[script]: one script (a file or a module) in place of [model], [data], [training] and [metrics]."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from ..problems import Problem
from ..schema import ENGINE_SECTIONS
from ..values import toml_literal
from .common import is_dir, is_file, relative_fix, resolve_path, table_of, value_of, value_or_default

_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def rules_script(file: str, data: Mapping[str, Any], base_dir: Path | None) -> list[Problem]:
    """[script]: one script (a file or a module) in place of [model], [data], [training] and [metrics]."""
    out: list[Problem] = []
    script = table_of(data, "script")
    for section in ENGINE_SECTIONS:
        if section in data:
            out.append(Problem(file, section, f"[{section}] is tuitrain's engine's, but [script] runs your own script "
                               "(it builds its own model, data and TrainingArguments)",
                               f"remove the [{section}] section, or remove [script] to train with tuitrain's engine"))
    path = value_or_default(script, "script.path")
    module = value_or_default(script, "script.module")
    where = relative_fix(base_dir)
    if "path" in script and "module" in script:
        out.append(Problem(file, "script", "both script.path and script.module are given",
                           'keep one: path = "train.py" (a file) or module = "pkg.train" (run as python -m)'))
    elif "path" not in script and "module" not in script:
        out.append(Problem(file, "script", "no script: neither script.path nor script.module is given",
                           'set script.path = "train.py", or script.module = "pkg.train"'))
    if path is not None:
        resolved = resolve_path(path, base_dir)
        if not path.strip():
            out.append(Problem(file, "script.path", "is empty", 'e.g. path = "train.py"'))
        elif not is_file(resolved):
            what = "is a folder, not a file" if is_dir(resolved) else "no such file"
            out.append(Problem(file, "script.path", f"{what}: {resolved}", where))
    if module is not None and not _MODULE_NAME.match(module):
        out.append(Problem(file, "script.module", f"{toml_literal(module)} is not a module name",
                           'give a dotted name as python -m takes it, e.g. module = "pkg.train"'))
    workdir = value_or_default(script, "script.workdir")
    if workdir is not None and not is_dir(resolve_path(workdir, base_dir)):
        out.append(Problem(file, "script.workdir", f"no such folder: {resolve_path(workdir, base_dir)}", where))
    resume_arg = value_of(script, "resume_arg", "str")
    if resume_arg is not None and (not resume_arg.startswith("-") or any(c.isspace() for c in resume_arg)):
        out.append(Problem(file, "script.resume_arg", f"{toml_literal(resume_arg)} is not an option name",
                           'e.g. resume_arg = "--resume_from_checkpoint" (or "--resume=" for one argument)'))
    if value_or_default(table_of(data, "run"), "run.output_dir"):
        out.append(Problem(file, "run.output_dir", "has no effect with [script]: checkpoints go where the script's "
                           "TrainingArguments(output_dir=...) says, and tuitrain reads it from the Trainer",
                           "remove it (pass the folder to your script in script.args)", severity="warning"))
    return out

