"""Runs over the run directory's contract (tuitrain.rundir), one room a job: starting one (`start`), keeping it
(`keeper`), this machine's queue (`queue`), and what viewers read and ask of it (`view`). What every room asks sits
here: the runs root (`catalog`), whether a run lives (`liveness`, `lost_word`), requests to a live run (`control`),
who may act on one (`run_owner`)."""
