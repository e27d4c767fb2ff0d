"""A worker that raised reaches the app, whichever screen started it.

Textual tells a worker's end only to the node that started it (`Worker.StateChanged` does not bubble), and the
app's workers, like the screens', run with `exit_on_error=False`: without this a refusal raised in a screen's
worker was seen by nobody. A screen (and the app itself) built on `PassesFailedWorkUp` posts `WorkFailed`, which
bubbles to the app's one handler (`TuitrainApp.on_work_failed`: a `TuitrainError` as its own words)."""

from __future__ import annotations

from textual.message import Message
from textual.worker import Worker, WorkerState


class WorkFailed(Message):
    """A worker raised `error`; `worker_name` says what it was doing."""

    def __init__(self, worker_name: str, error: BaseException) -> None:
        super().__init__()
        self.worker_name = worker_name
        self.error = error


class PassesFailedWorkUp:
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        error = event.worker.error
        if event.state == WorkerState.ERROR and error is not None:
            event.worker.node.post_message(WorkFailed(event.worker.name, error))
