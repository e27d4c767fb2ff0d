"""Script mode, the rank side: what a rank running the user's own script gets from tuitrain.

`site/sitecustomize.py` is on every such rank's PYTHONPATH (tuitrain/launch/script.py puts it
there); it calls `boot.boot()`, which does nothing outside a tuitrain run. In a rank it writes the
rank's log and record, watches the supervisor, records how the script ended, and adds tuitrain's
callbacks to every `transformers.Trainer` once the script imports transformers (`trainer_hook`).
Scripts without a Trainer report with `tuitrain.report` and `tuitrain.saved` (`api`).

Nothing here imports torch or transformers at interpreter start. The environment variables' names are
tuitrain.rundir.script_env's.
"""
