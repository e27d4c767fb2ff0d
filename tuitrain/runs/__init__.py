"""Run directories, the detached supervisor, and what viewers read from and ask of a run."""
