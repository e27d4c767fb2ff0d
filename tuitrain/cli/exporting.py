"""`tuitrain export RUN OUT [--checkpoint ...]`: one of a run's checkpoints as a full model folder.

The merge needs torch and the model's classes, which the CLI never imports: it runs
`python -m tuitrain.engine.export` in a child interpreter and reports its one line.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from tuitrain.cli.errors import CliError
from tuitrain.rundir.run import Run
from tuitrain.runs.catalog import find_run, load_record
from tuitrain.runs.start.from_profile import ResumeError, choose_checkpoint

EXPORT_MODULE = "tuitrain.engine.export"


def _ran_a_script(profile: Path) -> bool:
    import tomllib

    try:
        return "script" in tomllib.loads(profile.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def cmd_export(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    record = load_record(paths)
    if _ran_a_script(paths.profile):
        raise CliError(f"run {paths.id} ran your own script ([script]): its checkpoints are the script's own; "
                       "export them with the script's tools")
    if not Run(paths, record).output_dir:
        raise CliError(f"run {paths.id} has no output folder; nothing to export")
    try:
        checkpoint = choose_checkpoint(record, args.checkpoint)
    except ResumeError as exc:
        raise CliError(str(exc).replace("nothing to resume from", "nothing to export").replace(
            "cannot be resumed from", "cannot be exported")) from None
    out = Path(args.out).expanduser().absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CliError(f"{out} already exists and is not an empty folder; give a new folder to export into")
    print(f"exporting {checkpoint.path.name} (step {checkpoint.step}) of run {paths.id} to {out}", file=sys.stderr)
    result = subprocess.run([sys.executable, "-m", EXPORT_MODULE, str(paths.profile), str(checkpoint.path), str(out)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        if errors:
            raise CliError(errors[-1].removeprefix("error: "))
        tail = "\n".join(result.stderr.strip().splitlines()[-20:])
        raise CliError(f"the export of {checkpoint.path.name} failed (exit {result.returncode}):\n{tail}", code=1)
    done = result.stdout.strip().splitlines()
    print(f"{out}: {done[-1] if done else 'exported'}; load it with from_pretrained({str(out)!r})")
    return 0
