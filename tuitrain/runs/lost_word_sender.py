"""The detached sender of word of a lost run (`python -m tuitrain.runs.lost_word_sender RUN_DIR`, started by
`runs.lost_word.send_lost_word`): records `lost` and sends word once. Apart from `lost_word` so that the viewers
that start it (`runs.liveness.settle_lost`) are not imported back by it."""

from __future__ import annotations

import sys
from pathlib import Path

from tuitrain.rundir.layout import RunPaths
from tuitrain.runs.lost_word import first_to_tell


def tell_lost(paths: RunPaths) -> None:
    from tuitrain.notify import RunWord, notify_end
    from tuitrain.rundir.events import progress, read_events
    from tuitrain.rundir.record import read_record
    from tuitrain.rundir.run import Run
    from tuitrain.runs.liveness import settle_lost

    run = Run(paths, settle_lost(paths, read_record(paths)))
    if run.status != "lost" or not first_to_tell(paths):
        return
    notify_end(RunWord.of(run), lambda: progress(read_events(paths.events)), str(paths.root))


if __name__ == "__main__":
    tell_lost(RunPaths(Path(sys.argv[1])))
