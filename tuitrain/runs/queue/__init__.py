"""This machine's queue of runs: its entries under one lock (`entries`), the rule for whose turn it is (`rule`), a
queued run's supervisor waiting for it (`wait`, `wakeup`), cancel and move (`cancel`, `move`), and the line as viewers
show it (`look`)."""
