"""Script mode, the rank side: what a rank running the user's own script gets from tuitrain.

`site/sitecustomize.py` is on every such rank's PYTHONPATH (tuitrain/launch/script.py puts it
there); it calls `boot.boot()`, which does nothing outside a tuitrain run. In a rank it writes the
rank's log and record, watches the supervisor, records how the script ended, and adds tuitrain's
callbacks to every `transformers.Trainer` once the script imports transformers (`trainer_hook`).
Scripts without a Trainer report with `tuitrain.report` and `tuitrain.saved` (`api`).

Nothing here imports torch or transformers at interpreter start.
"""

SCRIPT_ENV = "TUITRAIN_SCRIPT"  # what the ranks run; set by the plan, it tells the hook it is in a run
RUN_DIR_ENV = "TUITRAIN_RUN_DIR"  # set by the supervisor
HOOKED_ENV = "TUITRAIN_HOOKED"  # set by a hooked rank: its own children (workers, helpers) are not ranks
MACHINE_RANK_ENV = "TUITRAIN_MACHINE_RANK"  # set by the supervisor: the machine its ranks run on (in their records)
