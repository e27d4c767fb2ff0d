"""Starting a run: a fresh run directory with its frozen inputs and a detached supervisor (`new_run`), a run from a
profile or a resume from a checkpoint (`from_profile`, with what an override on resume may change: `resume_rule`), and
one live run per output folder (`output_claim`)."""
