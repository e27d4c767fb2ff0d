"""Slurm: `tuitrain submit` writes an sbatch script for a profile and submits it; inside the job, one tuitrain agent
per node (started by `srun`) plans that node's `accelerate launch` and supervises it, writing straight into the run
directory on the cluster's shared filesystem; viewers read the job's state with squeue/sacct beside tuitrain's own.

Only the standard library and tuitrain's lower layers are imported here (never torch or accelerate)."""
