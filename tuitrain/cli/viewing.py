"""runs, status, logs, checkpoints: reading run directories, never changing them."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from tuitrain.backends import for_run, settle_runs
from tuitrain.backends.base import Settled
from tuitrain.cli.errors import CliError
from tuitrain.cli.output import age, print_json, table
from tuitrain.humanize import duration, number, size
from tuitrain.rundir.checkpoints import run_checkpoints
from tuitrain.rundir.events import Figure
from tuitrain.rundir.exits import exit_name, explained_itself
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import FINAL_STATUSES, RunRecord, RunRecordError, Time
from tuitrain.rundir.run import UNREADABLE, Fields, Run
from tuitrain.rundir.tail import read_new_lines
from tuitrain.runs.catalog import find_run, load_record, scan_runs
from tuitrain.runs.keeper.manifest import Manifest, scan_manifests
from tuitrain.runs.keeper.samples import damaged_words, scan_run_samples
from tuitrain.runs.liveness import effective_status, settle_lost
from tuitrain.runs.view.attempts import attempt_line, earlier_lines
from tuitrain.runs.view.hang import status_label
from tuitrain.runs.view.logfile import display_text, plain_text
from tuitrain.runs.view.summary import run_summary

if TYPE_CHECKING:
    from tuitrain.runs.view.warning_fold import WarningFold


def _entry_summary(entry: Run, settled: Settled | None) -> dict:
    """A run's summary (`settled`: its record as its backend settled it), or for one whose run.json cannot be read:
    what is known and why."""
    if settled is not None:
        return run_summary(entry.paths, settled[0], with_checkpoints=False, job=settled[1])
    return {"id": entry.paths.id, "run_dir": str(entry.paths.root), "status": UNREADABLE,
            "reason": entry.reason, "error": entry.message, "created": entry.created}


NAME_WIDTH = 32  # a profile name in a list of runs (`status` shows it whole)


class ListedProgress(TypedDict):
    step: int
    max_steps: int | None
    loss: Figure


class _Listed(TypedDict):
    id: str
    status: str
    progress: ListedProgress


class Listed(_Listed, total=False):
    """What a line of `tuitrain runs` reads of a run's summary (`runs --json`): another box's, read back for
    `--all-hosts`, is checked against it first (a box's words are data)."""

    profile: str
    created: Time | None
    attempt_label: str | None


class _ListedUnreadable(TypedDict):
    id: str
    status: Literal["unreadable"]
    reason: str | None


class ListedUnreadable(_ListedUnreadable, total=False):
    created: Time | None


def listed_problem(row: object) -> str | None:
    """Why a row of another box's `runs --json` cannot be a line of the list; None when it can."""
    from tuitrain.rundir.json_shape import problem

    return problem(row, Listed | ListedUnreadable)


def clip(text: str, width: int = NAME_WIDTH) -> str:
    """`text` on one line of at most `width` characters, cut with '…'."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def runs_row(s: dict) -> list[str]:
    if s["status"] == UNREADABLE:
        return [s["id"], "?", UNREADABLE, "-", "-", age(s.get("created")), s["reason"]]
    p = s["progress"]
    step = f"{p['step']}/{p.get('max_steps') or '?'}"
    attempt = s.get("attempt_label")
    return [s["id"], clip(str(s.get("profile", "?"))), status_label(s) + (f" · {attempt}" if attempt else ""), step,
            number(p.get("loss")), age(s.get("created")), ""]


def pids_text(pids: Any) -> str:
    """A run's recorded pids for people: "supervisor 12, launcher 13, rank 0 14, rank 1 15" ('-' for none)."""
    if not isinstance(pids, dict) or not pids:
        return "-"
    parts = []
    for role, pid in pids.items():
        if isinstance(pid, dict):  # "ranks": {"0": pid, ...}
            parts += [f"{role.removesuffix('s')} {sub} {inner}" for sub, inner in pid.items()]
        else:
            parts.append(f"{role} {pid}")
    return ", ".join(parts) or "-"


def _job_label(s: dict) -> str:
    """A Slurm run's job and its state (`job 42 PENDING (Resources)`); '-' for a local run."""
    job = s.get("slurm_state")
    return f"job {job['job_id']} {job['label']}" if job else "-"


def cmd_runs(args: argparse.Namespace) -> int:
    entries = scan_runs(args.runs_root)
    readable = [(e.paths, e.record) for e in entries if e.record is not None]
    settled = iter(settle_runs(readable))  # one squeue for every Slurm run
    summaries = [_entry_summary(e, next(settled) if e.record is not None else None) for e in entries]
    if args.json:
        print_json(summaries)
        return 0
    if not summaries:
        print(f"no runs under {args.runs_root}")
        return 0
    headers = ["ID", "PROFILE", "STATUS", "STEP", "LOSS", "AGE", ""]
    rows = [runs_row(s) for s in summaries]
    if any(s.get("slurm_state") for s in summaries):  # a scheduler's state beside tuitrain's own
        headers.insert(3, "SLURM")
        for row, s in zip(rows, summaries, strict=True):
            row.insert(3, _job_label(s))
    print(table(rows, headers))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    record = load_record(paths)
    backend = for_run(record)
    record, job = backend.settle([(paths, record)])[0]
    record = settle_lost(paths, record)  # as the summary says it: what the lines below read is the same record
    summary = run_summary(paths, record, job=job)
    usage = _run_usage(paths, record)
    manifests, damaged = scan_manifests(paths.root)
    damaged_samples = scan_run_samples(paths.root)[1]
    if args.json:
        print_json({**summary, "usage": usage, "manifests": {str(rank): m for rank, m in manifests.items()},
                    "damaged_manifests": {str(rank): why for rank, why in damaged.items()},
                    "damaged_samples": {str(rank): why for rank, why in damaged_samples.items()}})
        return 0
    run = Run(paths, record)  # the record's fields; `summary`, what is worked out from them and the run's files
    p = summary["progress"]
    print(f"run        {paths.id}  ({paths.root})")
    print(f"profile    {run.profile or '?'}")
    failed_rank = f"  (rank {run.failed_rank} failed)" if run.failed_rank is not None else ""
    print(f"status     {status_label(summary)}{failed_rank}")
    if run.error:
        print(f"why        {run.error}")
    attempt = attempt_line(run)
    if attempt:  # this attempt, then each earlier one's end
        print(f"restarts   {attempt}")
        for line in earlier_lines(run):
            print(f"           {line}")
    if run.not_restarted:
        print(f"restart    {run.not_restarted}")
    from tuitrain.cli.queueing import status_lines

    for line in status_lines(paths.root, record):
        print(line)
    for line in summary.get("hang_lines") or []:
        print(f"hang       {line}")
    if run.status == "stopping":
        from tuitrain.cli.controlling import stop_blockers

        for line in stop_blockers(paths):
            print(f"stop waits {line}")
    if summary.get("stacks_digest"):
        print("stacks     " + "; ".join(summary["stacks_digest"]) + f"   (tuitrain stacks {paths.id})")
    if job is not None:
        where = job.get("partition")
        print(f"slurm      {_job_label(summary)}" + (f"   partition {where}" if where else "")
              + (f"   ({job['problem']})" if job.get("problem") else ""))
    print(f"step       {p['step']}/{p.get('max_steps') or '?'}   epoch {number(p.get('epoch'), 3)}   loss {number(p.get('loss'))}")
    if p["eval"]:
        print("eval       " + "  ".join(f"{k[5:]} {number(v)}" for k, v in p["eval"].items() if not k.endswith(("runtime", "per_second"))))
    print(f"processes  {run.num_processes}   pids {pids_text(run.pids)}")
    if run.accelerator:
        why = run.accelerator_why
        print(f"device     {run.accelerator}" + (f"   ({why})" if why else "   (asked for)"))
    for machine in backend.machines(record):  # a multi-machine run: which host runs which ranks
        print(f"machine {machine['machine_rank']}  {machine['host']}   {machine['num_processes']} process(es)   "
              f"its files there: {machine['node_dir']}")
    print(f"duration   {duration(summary.get('duration'))}   started {age(run.started)}")
    print(f"output     {run.output_dir or '(none named: the script made no Trainer and reported no checkpoint)'}")
    if run.output_removed:
        print(f"           removed at {time.strftime('%H:%M:%S', time.localtime(run.output_removed))} while the "
              "run went on (made again): the checkpoints written before then are gone")
    if run.parent:
        print(f"resumed    from {run.parent} at {run.resume_from}")
    if run.exit_codes:
        print("exit codes " + "   ".join(f"{who if who.startswith('launcher') else 'rank ' + who} {exit_name(code)}"
                                         for who, code in run.exit_codes.items()))
    complete = [c for c in summary.get("checkpoints", []) if c["complete"]]
    print(f"checkpoints {len(summary.get('checkpoints', []))} ({len(complete)} complete)")
    for line in _manifest_lines(paths, record, manifests, damaged):
        print(line)
    for line in _usage_lines(usage) + [f"samples    {damaged_words(m, why)}" for m, why in damaged_samples.items()]:
        print(line)
    for error in p["errors"]:
        print(f"error      rank {error['rank']}: {error['message']}")
    if summary.get("traceback") and explained_itself(record):
        print(f"traceback  tuitrain logs {paths.id} --rank {run.failed_rank}")
    elif summary.get("traceback"):
        print(f"\nlast lines of {summary['traceback_file']}:")
        for line in summary["traceback"]:
            print(f"  {line}")
    return 0


def _manifest_lines(paths: RunPaths, record: RunRecord, manifests: dict[int, Manifest], damaged: dict[int, str]) -> list[str]:
    """What the run ran on, short (machine 0's; other machines only where they differ): `--json` has it all."""
    from tuitrain.runs.view.diff import RunFacts, machine_differences, short_manifest

    lines = [f"{label:<10} {text}" for label, text in short_manifest(manifests)]
    lines += [f"{'manifest':<10} machine {rank}'s is damaged: {why}" for rank, why in damaged.items()]
    facts = RunFacts(paths.id, str(paths.root), record, {}, None, manifests)
    lines += [f"{'differs':<10} {d.line()[10:]}" for d in machine_differences(facts)]
    return lines


def _run_usage(paths: RunPaths, record: RunRecord) -> dict | None:
    """What the run's GPU/CPU samples say (tuitrain.runs.view.usage), as JSON data; None where it kept none."""
    from dataclasses import asdict

    from tuitrain.runs.view.usage import run_usage

    found = run_usage(paths.root, record)
    if found is None:
        return None
    return {**asdict(found.usage), "hints": [asdict(h) for h in found.hints], "files": list(found.files)}


def _pct(value: float | None) -> str:
    return f"{value:.0f}%" if value is not None else "N/A"


def _usage_lines(usage: dict | None) -> list[str]:
    """`usage` GPU, rank and host lines over the training time, then one `hint` line per hint."""
    if usage is None or not usage["samples"]:
        return []
    span = "of training" if usage["training"] else "before training began"
    lines = [(f"usage      {usage['samples']} samples over {duration(usage['seconds'])} {span} "
              f"({', '.join(usage['files'])})")]
    for gpu in usage["gpus"]:
        total = f"{gpu['memory_total'] / 1024:.1f}" if gpu["memory_total"] else "?"
        peak = f"{gpu['memory_peak'] / 1024:.1f}" if gpu["memory_peak"] is not None else "N/A"
        lines.append(f"  GPU {gpu['index']}    util {_pct(gpu['util_mean'])} mean, {_pct(gpu['util_peak'])} peak   "
                     f"memory peak {peak}/{total} GiB   {gpu['name'] or ''}".rstrip())
    for rank in usage["ranks"]:
        rss = size(int(rank["rss_peak"] * 2**20)) if rank["rss_peak"] is not None else "N/A"
        wait = f"   waits for its batch {_pct(rank['wait_mean'])} of its step time" if rank.get("wait_mean") is not None else ""
        lines.append(f"  rank {rank['rank']}   CPU {_pct(rank['cpu_mean'])} of a core mean, {_pct(rank['cpu_peak'])} "
                     f"peak   RSS peak {rss}{wait}")
    for host in usage["hosts"]:
        lines.append(f"  host     CPU {_pct(host['cpu_mean'])} of {host['cpu_count'] or '?'} cores mean")
    lines += [f"hint       {hint['text']}" for hint in usage["hints"]]
    return lines


def _rank_logs(paths: RunPaths) -> list[tuple[str, Path]]:
    logs = sorted(paths.logs.glob("rank-*.log"), key=lambda p: int(p.stem.split("-")[1]))
    return [(p.stem.split("-")[1], p) for p in logs]


def attempt_paths(paths: RunPaths, number: int) -> tuple[RunPaths, bool]:
    """The folder of a restarted run's attempt N (attempts/N/, or the run's own for the attempt it is in), and
    whether it is the attempt now: only that one can be followed."""
    now = Run(paths, load_record(paths)).attempt
    if number == now:
        return paths, True
    if 1 <= number < now and paths.attempt(number).root.is_dir():
        return paths.attempt(number), False
    kept = sorted(int(p.name) for p in paths.attempts.iterdir() if p.name.isdecimal()) if paths.attempts.is_dir() else []
    raise CliError(f"run {paths.id} has no attempt {number} (its attempts: "
                   f"{', '.join(map(str, [*kept, now]))}; the one now is {now})")


def cmd_logs(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    if getattr(args, "attempt", None) is not None:
        paths, now = attempt_paths(paths, args.attempt)
        args.follow = args.follow and now
    if args.launcher:
        return _print_log(paths, paths.launcher_log, args.follow)
    if args.rank is not None:
        log = paths.rank_log(args.rank)
        if not log.exists():
            have = ", ".join(r for r, _ in _rank_logs(paths)) or "none yet"
            raise CliError(f"run {paths.id} has no log for rank {args.rank} (ranks: {have})")
        return _print_log(paths, log, args.follow)
    return _print_merged(paths, args.follow)


def _print_log(paths: RunPaths, log: Path, follow: bool) -> int:
    """One log, its whole lines as written (or as a terminal would show them, into a pipe), a warning printed
    again folded into one line (tui.log_filter.WarningFold, as the app's log view folds it)."""
    from tuitrain.runs.view.warning_fold import WarningFold

    offset = 0
    fold = WarningFold()
    while True:
        ended, problem = _has_ended(paths) if follow else (True, None)
        offset = _print_new(log, offset, sys.stdout, fold)
        if problem:
            raise CliError(problem)
        if ended:
            return 0
        try:
            time.sleep(0.25)
        except KeyboardInterrupt:
            return 0


def _rank_count(paths: RunPaths) -> int:
    found = [int(rank) for rank, _ in _rank_logs(paths)]
    try:
        expected = Fields(load_record(paths)).num_processes
    except RunRecordError:
        expected = 0
    return max([expected, *(rank + 1 for rank in found)])


def _print_merged(paths: RunPaths, follow: bool) -> int:
    """Every rank's whole lines in the order they were written (runs.view.merged_log.MergedLog), each
    prefixed with its rank when there are several; a warning printed again folded into one line."""
    from tuitrain.runs.view.logfile import LogFile
    from tuitrain.runs.view.merged_log import MergedLog
    from tuitrain.runs.view.warning_fold import WarningFold

    fold = WarningFold()
    logs = [LogFile(paths.rank_log(rank)) for rank in range(_rank_count(paths))]
    merged = MergedLog(logs)
    prefix = len(logs) > 1
    terminal = _is_terminal(sys.stdout)
    printed = 0
    try:
        while True:
            ended, problem = _has_ended(paths) if follow else (True, None)
            wall = time.time()
            for log in logs:
                log.update()
            merged.sync(None if ended else wall)
            out = []
            for index in range(printed, len(merged.lines)):
                rank, raw = merged.raw(index)
                # a terminal gets what it would have shown of the line (its colours kept: after tqdm's
                # last carriage return, so the prefix stays); a pipe or a file the same without codes
                text = _shown(fold, rank, raw, terminal)
                if text is None:
                    continue
                out.append(f"[rank {rank}] {text}\n" if prefix else text + "\n")
            printed = len(merged.lines)
            if out:
                sys.stdout.write("".join(out))
                sys.stdout.flush()
            if problem:
                raise CliError(problem)
            if ended:
                return 0
            try:
                time.sleep(0.25)
            except KeyboardInterrupt:
                return 0
    finally:
        for log in logs:
            log.close()


def _has_ended(paths: RunPaths) -> tuple[bool, str | None]:
    """Whether a followed run is over (ended, or nothing of it left alive to write more), and why
    following must stop short. Read before the logs, so what a run wrote before it ended is printed."""
    try:
        record = load_record(paths)
    except RunRecordError as exc:
        return True, f"{exc}; its logs so far are above"
    record = for_run(record).settle([(paths, record)])[0][0]  # a Slurm job may end unrecorded (cancelled, …)
    status = effective_status(record)
    if status == "lost":
        print(f"run {paths.id} is lost: its supervisor is gone without recording an end", file=sys.stderr)
    return status in FINAL_STATUSES, None


def _is_terminal(out: Any) -> bool:
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False


def _shown(fold: WarningFold, rank: int | None, raw: bytes, terminal: bool, as_written: bool = False) -> str | None:
    """A log line as `logs` prints it, None when `fold` (a WarningFold) leaves it out: into a pipe, what a
    terminal would have shown without its codes; to a terminal, as written (`as_written`) or what it shows (tqdm's
    last redraw, colours kept); a warning printed again, the one line that stands for it (dim on a terminal)."""
    from tuitrain.runs.view.warning_fold import DIM

    plain = plain_text(raw)
    shown = fold.fold(rank, plain)
    if shown is None:
        return None
    if shown is not plain:
        return DIM.format(shown) if terminal else shown
    if not terminal:
        return plain
    return raw.decode("utf-8", errors="replace") if as_written else display_text(raw)


def _print_new(log: Path, offset: int, out: Any, fold: WarningFold) -> int:
    """Print whole lines after `offset`, a warning printed again folded by `fold` (a WarningFold); return the new
    offset (a partial last line waits)."""
    lines = read_new_lines(log, offset)
    if lines:
        terminal = _is_terminal(out)
        whole = b"".join(lines).split(b"\n")[:-1]  # (read_new_lines also splits at each \r)
        shown = (_shown(fold, None, line, terminal, as_written=True) for line in whole)
        out.write("".join(text + "\n" for text in shown if text is not None))
        out.flush()
    return offset + sum(len(line) for line in lines)


def cmd_checkpoints(args: argparse.Namespace) -> int:
    paths = find_run(args.runs_root, args.run)
    record = load_record(paths)
    checkpoints = run_checkpoints(record)
    if args.json:
        print_json([c.to_dict() for c in checkpoints])
        return 0
    if not checkpoints:
        out = Run(paths, record).output_dir
        where = f"in {out}" if out else "(the run names no output folder)"
        print(f"no checkpoints {where}")
        return 0
    rows = []
    for c in checkpoints:
        state = "complete" if c.complete else f"INCOMPLETE ({c.why})"
        metrics = "  ".join(f"{k} {number(v)}" for k, v in c.metrics.items()
                            if k in ("loss", "eval_loss", "eval_accuracy", "eval_f1", "eval_perplexity"))
        rows.append([str(c.step), state, size(c.size_bytes), metrics or "-", str(c.path)])
    print(table(rows, ["STEP", "STATE", "SIZE", "METRICS", "PATH"]))
    return 0
