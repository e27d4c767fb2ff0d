"""The run directory's contract: where each file of a run lives (layout), the record (run.json), events, checkpoints and
the best of them, the ranks' records, heartbeats and line times, how a process ended, a full disk in words, and the
names of script mode's environment.

What a rank writes and every viewer, keeper and backend reads; the engine's and a script's ranks load nothing else of
tuitrain's run side. It imports only the standard library and tuitrain.atomic, so every layer may ask it.
"""
