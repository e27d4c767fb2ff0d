"""Several workstations from one terminal: `workstations` checks each, `runs --all-hosts` lists every
box's runs with a HOST column, and a run's verbs (`logs HOST:RUN --follow`, `status`, `stop`, `export`, …) run on its
box (export's folder is written there).
Every box, this one included, answers through the same CLI contract (`runs --json`, the verbs' own output)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuitrain.cli.errors import CliError

if TYPE_CHECKING:
    from tuitrain.hardware.report import ReportJson

REMOTE_VERBS = frozenset({"status", "logs", "checkpoints", "save", "evaluate", "stop", "resume", "stacks", "export"})
LIST_SECONDS = 20.0  # what one box may take to list its runs before it is shown as unreachable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")
    # what another box's app runs here over ssh to watch this box's runs (remote.runs_stream); not for people
    p.add_argument("--stream", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--gpus", action="store_true", help=argparse.SUPPRESS)  # the stream carries this box's GPUs too
    # what another box's app runs here to mirror one run for its monitor (remote.run_mirror); not for people
    p.add_argument("--mirror", default=None, metavar="RUN", help=argparse.SUPPRESS)


def add_launch_host_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", "-H", default=None, metavar="HOST",
                   help="start it on this workstation of your settings ([[workstations]]): the profile is sent there "
                        "(its data files must be at the same paths there) and the run detached; prints HOST:RUN")


def add_host_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", "-H", default=None, metavar="HOST",
                   help="a workstation of your settings ([[workstations]]) where the run lives (or write HOST:RUN)")


def remote_target(args: argparse.Namespace) -> tuple[str, str] | None:
    """(host, run) when this command is meant for a run on another workstation: `--host HOST`, or `HOST:RUN` where
    HOST is a configured workstation; None for a run here."""
    run = getattr(args, "run", None)
    if args.command == "run":  # a profile of this machine started there: cmd_run_there
        return None
    if getattr(args, "host", None):
        return args.host, str(run)
    if args.command not in REMOTE_VERBS or not isinstance(run, str) or ":" not in run:
        return None
    host, _, ref = run.partition(":")
    if not host or "/" in host:
        return None
    from tuitrain.remote.workstations import workstations

    return (host, ref) if any(w.host == host for w in workstations()) else None


HERE_ONLY = frozenset({"host", "runs_root"})  # options naming this machine's view: the box has its own runs folder


def verb_parser(command: str) -> argparse.ArgumentParser:
    """The parser of one command: the one list of the options its local verb takes."""
    from tuitrain.cli import build_parser

    verbs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return verbs.choices[command]


def remote_argv(args: argparse.Namespace, ref: str) -> list[str]:
    """The command as this machine's parser read it, for the other box: each option of the verb's parser from its
    parsed value (`--key=value`, so a value is never read as an option there; a default is not said), without
    --host/-H and --runs-dir however they were written, the run named as it is there."""
    options: list[str] = []
    positionals: list[str] = []
    for action in verb_parser(args.command)._actions:
        if isinstance(action, argparse._HelpAction) or action.dest in HERE_ONLY or not hasattr(args, action.dest):
            continue
        value = getattr(args, action.dest)
        if not action.option_strings:
            positionals += [ref] if action.dest == "run" else [str(v) for v in as_list(value)]
            continue
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:  # store_true and its kind: said when it differs from its default
            options += [flag] if value != action.default else []
        elif isinstance(action, argparse._AppendAction) or value != action.default:
            options += [f"{flag}={v}" for v in as_list(value)]
    return [args.command, *options, "--", *positionals]


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def cmd_remote(args: argparse.Namespace, argv: Sequence[str], host: str, ref: str) -> int:
    """Run this command on `host`, its output streamed here; ssh's own failures as one line. Its options are read
    from `args` (remote_argv), not from `argv` as written."""
    from tuitrain.remote import ssh
    from tuitrain.remote.workstations import find, workstations

    station = find(host, workstations())
    command = station.tuitrain(remote_argv(args, ref))
    try:
        proc = ssh.start(station.host, command, station.options(), stdout=None, stderr=subprocess.PIPE)
    except (OSError, ValueError) as exc:
        raise CliError(f"{host}: cannot start ssh ({exc})") from exc
    err = ""
    try:
        _, err = proc.communicate()
    except KeyboardInterrupt:  # `logs --follow`: Ctrl-C ends the remote command with its ssh link
        ssh.kill_group(proc, wait=5)
        return 130
    problem = ssh.classify(station.host, proc.returncode, err, command)
    if problem is not None and problem.kind not in ("exit",):
        raise CliError(str(problem))
    sys.stderr.write(err)
    return proc.returncode


def cmd_runs(args: argparse.Namespace) -> int:
    """`runs`, and with --all-hosts every workstation's too."""
    from tuitrain.cli import viewing

    if not args.all_hosts:
        return viewing.cmd_runs(args)
    rows, unreachable = all_runs(args)
    if args.json:
        print(json.dumps({"runs": rows, "unreachable": unreachable}, indent=2, default=str))
        return 0
    from tuitrain.cli.output import table

    lines = [[row["host"], *viewing.runs_row(row)] for row in rows]
    lines += [[item["host"], "-", "-", "unreachable", "-", "-", "-", item["error"]] for item in unreachable]
    if lines:
        print(table(lines, ["HOST", "ID", "PROFILE", "STATUS", "STEP", "LOSS", "AGE", ""]))
    else:
        print("no runs here or on any workstation")
    return 0


def print_answers(answers: list[tuple[str, str, str | None, str]], as_json: bool, command: str = "gpus") -> int:
    """What each machine's `tuitrain COMMAND [--json]` said (heading, host, why it did not answer or None, its
    output): under a `== heading` line each, or one JSON object by host (`{"error": why}` for one that did not
    answer). 1 when one did not answer."""
    failed = 0
    collected: dict[str, Any] = {}
    for heading, host, problem, out in answers:
        if problem is not None:
            failed += 1
            collected[host] = {"error": problem}
            if not as_json:
                print(f"== {heading}\n{problem}\n")
            continue
        if as_json:
            try:
                collected[host] = json.loads(out)
            except ValueError:
                collected[host] = {"error": f"{host}: `tuitrain {command} --json` printed no JSON (another tuitrain "
                                            "version?)"}
                failed += 1
        else:
            print(f"== {heading}\n{out.rstrip()}\n")
    if as_json:
        from tuitrain.cli.output import print_json

        print_json(collected)
    return 1 if failed else 0


def cmd_all_hosts(args: argparse.Namespace, command: list[str], here: Callable[[], str]) -> int:
    """`tuitrain COMMAND --all-hosts [--json]`: `here()` (this machine's output), then what each workstation of the
    settings answers to the same command (all at once), each under its host; one that does not, one line why."""
    from tuitrain.remote.workstations import LOCAL, answers_everywhere, workstations

    stations = workstations()
    local = here()
    asked = [*command, "--json"] if args.json else command
    answers = [(host, host, problem, out) for host, problem, out in answers_everywhere(stations, asked)]
    return print_answers([(LOCAL, LOCAL, None, local), *answers], args.json, " ".join(command))


def cmd_queue(args: argparse.Namespace) -> int:
    """`queue`, and with --all-hosts every workstation's queue too (each box has its own)."""
    from tuitrain.cli import queueing

    if not getattr(args, "all_hosts", False):
        return queueing.cmd_queue(args)
    if getattr(args, "action", None) or getattr(args, "run", None):
        raise CliError("--all-hosts only lists the queues; move a run in its own machine's queue (there: "
                       "`tuitrain queue move RUN --top`)")

    def here() -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            queueing.cmd_queue(args)
        return out.getvalue()

    return cmd_all_hosts(args, ["queue"], here)


def all_runs(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Every box's runs (this one first), each with its host; and the boxes that did not answer, with why."""
    from tuitrain.cli import viewing
    from tuitrain.remote.workstations import LOCAL, problem_line, run_everywhere, workstations

    here = io.StringIO()
    with contextlib.redirect_stdout(here):
        viewing.cmd_runs(argparse.Namespace(**{**vars(args), "json": True}))
    rows = [{**summary, "host": LOCAL} for summary in json.loads(here.getvalue())]
    unreachable = []
    for station, result in run_everywhere(workstations(), ["runs", "--json"], LIST_SECONDS):
        problem = problem_line(station, result)
        try:
            found = json.loads(result.stdout) if problem is None else None
        except ValueError:
            problem = f"{station.host}: its `tuitrain runs --json` did not answer in JSON (another tuitrain version?)"
            found = None
        if found is None:
            unreachable.append({"host": station.host, "error": problem or "no answer"})
            continue
        rows += [_listed(summary, station.host) for summary in (found if isinstance(found, list) else [found])]
    return rows, unreachable


def _listed(summary: Any, host: str) -> dict[str, Any]:
    """A row of a box's `runs --json` as a line of the list, or, where it does not check, a line saying why."""
    from tuitrain.cli.viewing import listed_problem
    from tuitrain.rundir.run import UNREADABLE

    why = listed_problem(summary)
    if why is None:
        return {**summary, "host": host}
    run_id = summary.get("id") if isinstance(summary, dict) else None
    return {"id": run_id if isinstance(run_id, str) else "?", "status": UNREADABLE, "host": host,
            "reason": f"its row cannot be read here ({why})"}


def cmd_workstations(args: argparse.Namespace) -> int:
    """Each workstation of the settings, reached and checked: one line each, what is wrong and its fix."""
    if args.stream:
        return cmd_stream(args)
    if args.mirror:
        return cmd_mirror(args)
    from tuitrain import __version__
    from tuitrain.remote.workstations import at_once, check, workstations
    from tuitrain.user_config import config_path

    found = at_once(workstations(), lambda station: check(station, __version__))
    if args.json:
        print(json.dumps([{"host": s.host, "ok": problem is None, "problem": problem} for s, problem in found], indent=2))
    elif not found:
        print(f"no workstations in {config_path()}; add one as [[workstations]] host = \"gpu2\"")
    else:
        for station, problem in found:
            print(problem or f"{station.host}: ok")
    return 1 if any(problem for _, problem in found) else 0


def cmd_stream(args: argparse.Namespace) -> int:
    """This box's runs, streamed to the app of another box that watches it over ssh (`runs_stream.serve`): a
    line each time they change, until its stdin closes (with --gpus its GPUs too). A runs folder it cannot list is
    one line first."""
    import dataclasses

    from tuitrain import __version__
    from tuitrain.backends import settle_runs
    from tuitrain.remote.runs_stream import HOME_SILENCE_SECONDS, serve
    from tuitrain.runs.catalog import scan_runs
    from tuitrain.runs.view.live import RunsWatcher

    scan_runs(args.runs_root)
    watcher = RunsWatcher(args.runs_root, settle_runs)

    def poll() -> list[dict[str, Any]]:
        rows, _ = watcher.poll()
        return [dataclasses.asdict(row) for row in rows]

    home_silence = None if sys.stdin.isatty() else HOME_SILENCE_SECONDS  # a person trying it by hand
    with contextlib.ExitStack() as stack:
        gpus = stack.enter_context(gpu_sampler(args.runs_root)) if args.gpus else None
        return serve(poll, __version__, sys.stdout.buffer, sys.stdin.buffer, home_silence=home_silence, gpus=gpus)


def cmd_mirror(args: argparse.Namespace) -> int:
    """One run of this box, mirrored to the app of another box that monitors it over ssh (`run_mirror.serve`): its
    files as they grow, its record and checkpoints as this box sees them, until its stdin closes. A run it cannot
    find is one line."""
    from tuitrain import __version__
    from tuitrain.remote.run_mirror import FolderFiles, serve
    from tuitrain.remote.runs_stream import HOME_SILENCE_SECONDS
    from tuitrain.runs.catalog import find_run

    paths = find_run(args.runs_root, args.mirror)
    home_silence = None if sys.stdin.isatty() else HOME_SILENCE_SECONDS
    return serve(FolderFiles(paths.root, extra=viewer_files(paths)), __version__, sys.stdout.buffer, sys.stdin.buffer,
                 home_silence=home_silence)


LOOK_SECONDS = 5.0  # how often a live run's checkpoints (and whether its supervisor lives) are looked at again
# (an ended run's: only when its run.json changes)


def viewer_files(paths: Any) -> Callable[[], dict[str, bytes]]:
    """What a viewer on another box needs that is no file here as it is: the record as this box judges it
    (`lost` when its supervisor is gone; no process ids, which name no process there) and the checkpoints as
    `rundir.checkpoints` finds them. Looked at again when run.json changes, else every LOOK_SECONDS."""
    import os
    import time

    from tuitrain.remote.run_mirror import CHECKPOINTS, RECORD
    from tuitrain.rundir.checkpoints import run_checkpoints
    from tuitrain.rundir.record import FINAL_STATUSES, RunRecordError, read_record
    from tuitrain.runs.liveness import effective_status

    looked: dict[str, Any] = {"stamp": None, "at": 0.0, "ended": False, "files": {}}

    def files() -> dict[str, bytes]:
        try:
            stamp = os.stat(paths.record).st_mtime_ns
        except OSError:
            return looked["files"]
        now = time.monotonic()
        if stamp == looked["stamp"] and (looked["ended"] or now - looked["at"] < LOOK_SECONDS):
            return looked["files"]
        try:
            record = read_record(paths)
        except (OSError, RunRecordError):
            return looked["files"]
        seen = {key: value for key, value in record.items() if key not in ("processes", "pids")}
        seen["status"] = effective_status(record)
        looked.update(stamp=stamp, at=now, ended=seen["status"] in FINAL_STATUSES, files={
            RECORD: json.dumps(seen, indent=2).encode(),
            CHECKPOINTS: json.dumps([c.to_dict() for c in run_checkpoints(record)]).encode()})
        return looked["files"]

    return files


@contextlib.contextmanager
def gpu_sampler(runs_root: Any) -> Iterator[Callable[[], ReportJson]]:
    """This box's GPU sample on each call (`hardware.report.gpu_sample`, owners from its runs), taken by one
    sampler that lives as long as the stream."""
    import os

    from tuitrain.hardware.mps import mps_available
    from tuitrain.hardware.recorded import library_from_env
    from tuitrain.hardware.report import gpu_sample
    from tuitrain.hardware.sampler import Sampler
    from tuitrain.runs.view.owners import OwnerIndex

    mps = mps_available()
    with Sampler(library_from_env(os.environ), owners=OwnerIndex(runs_root).get) as sampler:
        yield lambda: gpu_sample(sampler.sample(), mps)


def sent_profile(ref: str, overrides: Sequence[str]) -> tuple[Path, str]:
    """A profile of this machine as it is sent to another: its --set applied and its relative local paths made
    absolute from its folder here (`runs.start.new_run.freeze_paths`, as a run's frozen profile), as TOML. Checked there,
    not here: its data files need only be there."""
    from tuitrain.profile import resolve_profile_path
    from tuitrain.runs.start.new_run import sent_profile_text

    path = resolve_profile_path(ref)
    return path, sent_profile_text(path, overrides)


def cmd_run_there(args: argparse.Namespace) -> int:
    """`tuitrain run --host HOST PROFILE`: this machine's profile sent to that workstation, checked there by its
    `tuitrain validate` (its data files must be at the same paths there: no data is sent), then started there
    detached; prints HOST:RUN. A refusal is one line each (naming the host); nothing is started, nothing left."""
    from tuitrain.remote.launch_there import launch_there
    from tuitrain.remote.workstations import find, workstations
    from tuitrain.runs.queue.options import queue_options, refusal_there

    options = queue_options(args)
    refusal = refusal_there(options, args.host)
    if refusal:
        raise CliError(refusal)
    station = find(args.host, workstations())
    local, text = sent_profile(args.profile, args.set)
    passed = [*(["--no-doctor"] if getattr(args, "no_doctor", False) else []), *options.words()]
    launched = launch_there(station, local, text, passed)
    sys.stderr.write(launched.said)
    if launched.run_id is None:
        for line in launched.problems[:-1]:
            print(line, file=sys.stderr)
        raise CliError(launched.problems[-1] if launched.problems else f"{station.host}: not started")
    print(f"{station.host}:{launched.run_id}")
    return 0
