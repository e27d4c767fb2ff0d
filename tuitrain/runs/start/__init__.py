"""Starting a run: a fresh run directory with its frozen inputs and a detached supervisor (`new_run`), a run from a
profile or a resume from a checkpoint (`from_profile`), and one live run per output folder (`output_claim`)."""
