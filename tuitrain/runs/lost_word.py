"""Word of a `lost` run ([notify] on = [..., "lost"]). A lost run's supervisor is gone, so it cannot send word of
its end as the supervisor does (`runs.keeper.supervise`): whoever first sees it gone asks `send_lost_word`, which starts
`python -m tuitrain.runs.lost_word_sender RUN_DIR` detached (the sender never waits for a webhook). That process records
`lost` (`runs.liveness.settle_lost`) and sends word once per run (a marker made with O_EXCL), with the notify
settings of the user it runs as: only the run's owner asks (`send_lost_word` refuses another's run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tuitrain.rundir.layout import RunPaths

MARKER = ".lost-word-sent"


def send_lost_word(run_dir: Path | str) -> bool:
    """Start the detached sender for a run of this user whose supervisor is gone; False when it is not theirs or
    the run directory cannot be written."""
    paths = RunPaths(Path(run_dir))
    try:
        if os.stat(paths.root).st_uid != os.getuid() or (paths.root / MARKER).exists():
            return False
        with open(paths.launcher_log, "ab") as log:
            subprocess.Popen([sys.executable, "-m", "tuitrain.runs.lost_word_sender", str(paths.root)],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True, close_fds=True)
    except OSError:
        return False
    return True


def first_to_tell(paths: RunPaths) -> bool:
    try:
        os.close(os.open(paths.root / MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    return True
