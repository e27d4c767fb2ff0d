"""The names of script mode's environment variables: set by the planner and the supervisors, read by the rank side
(tuitrain.script), so neither needs the other to know them."""

SCRIPT_ENV = "TUITRAIN_SCRIPT"  # what the ranks run; set by the plan, it tells the hook it is in a run
RUN_DIR_ENV = "TUITRAIN_RUN_DIR"  # set by the supervisor
HOOKED_ENV = "TUITRAIN_HOOKED"  # set by a hooked rank: its own children (workers, helpers) are not ranks
MACHINE_RANK_ENV = "TUITRAIN_MACHINE_RANK"  # set by the supervisor: the machine its ranks run on (in their records)
