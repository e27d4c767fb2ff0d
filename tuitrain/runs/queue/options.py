"""The options of `tuitrain run` that queue a run: `--queue`, `--after`, `--after-ok`, `--sweep`,
`--max-parallel`, as the command line takes them and as the app's launch dialog takes them typed: one set of flags
for both (as `slurm.options` is for Slurm's), and the runs they name found in the runs root. Imported when the
command line's parser is built: the standard library (and `tuitrain.errors`) only, at import."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from tuitrain.errors import TuitrainError

if TYPE_CHECKING:
    from tuitrain.runs.queue.entries import QueueRequest


class QueueOptionsError(TuitrainError):
    """Queue options that cannot be read or do not go together, a run they name not found, or a sweep refused: one
    line that says the fix."""


def add_queue_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queue", action="store_true",
                   help="create the run queued and return its id: it starts by itself once its GPUs are free "
                        "(first queued, first started) and the runs of --after/--after-ok have ended")
    p.add_argument("--after", default=None, metavar="RUN[,RUN]",
                   help="queue it to start after these runs end, however they end (implies --queue)")
    p.add_argument("--after-ok", default=None, metavar="RUN[,RUN]",
                   help="queue it to start after these runs finish; if one ends otherwise, it never starts "
                        "(implies --queue)")


def add_sweep_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,…",
                   help="queue one run per value (several --sweep: every combination), each named for its values")
    p.add_argument("--max-parallel", type=int, default=None, metavar="N",
                   help="with --sweep: at most N of its runs at once (each waits for the run N places before it)")


@dataclass(frozen=True)
class QueueOptions:
    """What was asked: queued at all, after which runs (as written: ids, prefixes, `latest`), and a sweep."""

    queue: bool = False
    after: str | None = None
    after_ok: str | None = None
    sweep: tuple[str, ...] = field(default_factory=tuple)
    max_parallel: int | None = None

    @property
    def queues(self) -> bool:
        """Whether the run is queued rather than started at once (--after, --after-ok and --sweep imply it)."""
        return bool(self.queue or self.after or self.after_ok or self.sweep)

    def words(self) -> list[str]:
        """The options as `tuitrain run` takes them (to copy, or to pass to another workstation's tuitrain)."""
        out = ["--queue"] if self.queue else []
        out += [w for flag, value in (("--after", self.after), ("--after-ok", self.after_ok)) if value
                for w in (flag, value)]
        out += [w for spec in self.sweep for w in ("--sweep", spec)]
        return out + (["--max-parallel", str(self.max_parallel)] if self.max_parallel is not None else [])


def queue_options(args: argparse.Namespace) -> QueueOptions:
    """The options as argparse read them (a command without one of them has its default)."""
    return QueueOptions(queue=bool(getattr(args, "queue", False)), after=getattr(args, "after", None),
                        after_ok=getattr(args, "after_ok", None), sweep=tuple(getattr(args, "sweep", None) or ()),
                        max_parallel=getattr(args, "max_parallel", None))


def options_refusal(options: QueueOptions) -> str | None:
    """Why these options do not go together: --max-parallel without a sweep, or less than 1."""
    if options.max_parallel is not None and not options.sweep:
        return "--max-parallel limits the runs of a --sweep; give --sweep section.key=V1,V2 too"
    if options.max_parallel is not None and options.max_parallel < 1:
        return f"--max-parallel {options.max_parallel}: must be 1 or more (how many runs of the sweep at once)"
    return None


def refusal_there(options: QueueOptions, host: str) -> str | None:
    """Why these options do not go with a run started on another workstation (`run --host`): a sweep queues there,
    from that box's own tuitrain."""
    if options.sweep:
        return f"--sweep with --host: run the sweep there (`ssh {host} tuitrain run … --sweep …`)"
    return options_refusal(options)


class _Refusing(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise QueueOptionsError(f"queue options: {message}")


def options_from_text(text: str) -> QueueOptions:
    """`--sweep K=V1,V2 --max-parallel N --after RUN --after-ok RUN --queue` as typed; a mistake is one line."""
    parser = _Refusing(prog="run", add_help=False)
    add_queue_options(parser)
    add_sweep_options(parser)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise QueueOptionsError(f"queue options: {exc}") from None
    options = queue_options(parser.parse_args(words))
    refusal = options_refusal(options)
    if refusal:
        raise QueueOptionsError(refusal)
    return options


def _runs(root: Path, refs: str | None, option: str) -> tuple:
    from tuitrain.runs.catalog import RunNotFound, find_run

    found = []
    for ref in (r.strip() for r in (refs or "").split(",")):
        if not ref:
            continue
        try:
            found.append(find_run(root, ref))
        except RunNotFound as exc:
            raise QueueOptionsError(f"{option} {ref}: {exc}") from exc
    if refs is not None and not found:
        raise QueueOptionsError(f"{option} needs run ids (comma-separated); `tuitrain runs` lists them")
    return tuple(found)


def queue_request(runs_root: Path, options: QueueOptions) -> QueueRequest | None:
    """The QueueRequest the options ask for, its runs found under `runs_root`; None when they queue nothing
    (a sweep alone queues its runs with an empty request)."""
    if not (options.queue or options.after or options.after_ok):
        return None
    from tuitrain.runs.queue.entries import QueueRequest

    return QueueRequest(after=_runs(runs_root, options.after, "--after"),
                        after_ok=_runs(runs_root, options.after_ok, "--after-ok"))
