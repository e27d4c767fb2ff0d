"""What viewers (the CLI, the app) read of a run: one run in full (`summary`), runs as they go (`live`), logs
(`logfile`, `merged_log`, `warning_fold`), hangs and stacks (`hang`, `stacks`, `stacks_json`, `nccl_trace`), usage,
curves across resumes and differences (`usage`, `lineage`, `diff`), who owns a GPU process (`owners`), and a
scheduler's word on its job (`scheduler`). The keeper asks `hang` and `stacks` too."""
