"""`python -m tuitrain.engine RUN_DIR`: one rank of a run.

Output goes to the rank's own log file before anything heavy is imported, so every traceback —
import errors included — lands in logs/rank-K.log.
"""

import sys
from pathlib import Path

from tuitrain.engine.rank_io import exit_without_teardown, redirect_output_to_rank_log, register_stacks_dump, start_heartbeat
from tuitrain.engine.watchdog import watch_supervisor

if len(sys.argv) != 2:
    sys.exit("usage: python -m tuitrain.engine RUN_DIR")

_run_dir = Path(sys.argv[1])
_rank = redirect_output_to_rank_log(_run_dir)
watch_supervisor(_run_dir, _rank)
register_stacks_dump(_run_dir, _rank)
start_heartbeat(_run_dir, _rank).beat("starting", None)

from tuitrain.engine.main import main  # noqa: E402  (after the redirect, on purpose)

exit_without_teardown(main(_run_dir, _rank))
