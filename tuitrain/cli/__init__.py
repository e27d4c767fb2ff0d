"""The command line: the same verbs as the app, headless and scriptable.

Never imports torch, transformers, datasets, evaluate or accelerate (a test guards it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from tuitrain import __version__
from tuitrain.rundir.layout import default_runs_root


def _ssh_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ssh-config", default=None, metavar="FILE",
                   help="several machines: an ssh_config for ssh -F (default: your ~/.ssh/config)")


def _runs_dir_option(parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    parser.add_argument("--runs-dir", dest="runs_root", type=Path, default=default,
                        help="the runs root (default: $TUITRAIN_RUNS_DIR or ./runs)")


def _set_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a profile key for this launch (repeatable), e.g. --set training.max_steps=40")


def build_parser() -> argparse.ArgumentParser:
    launching = _LazyModule("tuitrain.cli.launching")
    viewing = _LazyModule("tuitrain.cli.viewing")
    controlling = _LazyModule("tuitrain.cli.controlling")

    parser = argparse.ArgumentParser(prog="tuitrain", description="Launch and watch Hugging Face training runs from a terminal.")
    parser.add_argument("--version", action="version", version=f"tuitrain {__version__}")
    _runs_dir_option(parser, default=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, handler, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        _runs_dir_option(p)
        p.set_defaults(handler=handler)
        return p

    p = command("run", launching.cmd_run, "start a run of a profile (a path, or a name like `demo`) and follow it")
    p.add_argument("profile")
    p.add_argument("--detach", "-d", action="store_true", help="print the run id and return; the run goes on")
    p.add_argument("--app", action="store_true",
                   help="watch it in the app (in a terminal; elsewhere follow it as without --app)")
    _ssh_options(p)
    _arguments_from("tuitrain.cli.workstations", "add_launch_host_option", p)
    p.add_argument("--no-doctor", action="store_true",
                   help="several machines: start without checking them first with `tuitrain doctor`")
    _set_option(p)
    _arguments_from("tuitrain.cli.queueing", "add_run_arguments", p)

    p = command("queue", _lazy("tuitrain.cli.workstations", "cmd_queue"), "this machine's queued runs, in order, with what each waits for")
    _arguments_from("tuitrain.cli.queueing", "add_queue_arguments", p)
    p.add_argument("--all-hosts", action="store_true",
                   help="this machine's queue, then that of every workstation of your settings")

    p = command("cancel", _lazy("tuitrain.cli.queueing", "cmd_cancel"), "drop a queued run from the queue")
    _arguments_from("tuitrain.cli.queueing", "add_cancel_arguments", p)

    p = command("resume", launching.cmd_resume, "start a new run that continues a run from one of its checkpoints")
    p.add_argument("run")
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)
    p.add_argument("--checkpoint", default="latest", help="latest (newest complete), checkpoint-N, or a path")
    p.add_argument("--detach", "-d", action="store_true")
    _ssh_options(p)
    _set_option(p)

    p = command("plan", launching.cmd_plan, "show what would run: command, environment, accelerate config (starts nothing)")
    p.add_argument("profile")
    p.add_argument("--json", action="store_true")
    _set_option(p)

    p = command("doctor", launching.cmd_doctor, "check every machine of a multi-machine profile over SSH before a "
                "launch: reachable, same versions, paths, network interface, free port")
    p.add_argument("profile")
    p.add_argument("--json", action="store_true")
    _ssh_options(p)
    p.add_argument("--timeout", type=float, default=20.0,  # backends.checks.DOCTOR_SECONDS, not imported for --help
                   help="seconds each machine may take (default 20)")
    _set_option(p)

    p = command("submit", _lazy("tuitrain.cli.submit", "cmd_submit"), "submit a profile as a Slurm batch job "
                "(--dry-run: print its sbatch script)")
    _add_submit_arguments(p)

    p = command("preview", _lazy("tuitrain.cli.previewing", "cmd_preview"), "the training data as the engine will "
                "tokenize it: the first rows as tokens, the label balance, token lengths and a suggested max_length")
    p.add_argument("profile")
    p.add_argument("--rows", type=int, default=5, help="how many rows to show (default 5)")
    _set_option(p)

    p = command("validate", launching.cmd_validate, "list every problem in a profile, each with file, key and fix "
                "(what `run` would refuse, checked on this machine: its GPUs, the output folder, the machines' plan)")
    p.add_argument("profile")
    p.add_argument("--offline", action="store_true",
                   help="check the profile alone, not against this machine (for a profile meant for another one)")
    _set_option(p)

    p = command("runs", _lazy("tuitrain.cli.workstations", "cmd_runs"), "list the runs under the runs root")
    p.add_argument("--json", action="store_true")
    p.add_argument("--all-hosts", action="store_true",
                   help="this machine's runs and those of every workstation of your settings, with a HOST column")

    p = command("workstations", _lazy("tuitrain.cli.workstations", "cmd_workstations"),
                "reach each workstation of your settings ([[workstations]]) and say, one line each, what is wrong")
    _arguments_from("tuitrain.cli.workstations", "add_arguments", p)

    p = command("status", viewing.cmd_status, "one run in full")
    p.add_argument("run")
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)
    p.add_argument("--json", action="store_true")

    p = command("diff", _lazy("tuitrain.cli.diffing", "cmd_diff"), "what differs between two runs, the likeliest "
                "causes first: data files, code, profile and TrainingArguments, then versions, GPUs and host")
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.add_argument("--json", action="store_true")

    p = command("logs", viewing.cmd_logs, "a rank's log, or every rank's merged with a rank prefix")
    p.add_argument("run")
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)
    p.add_argument("--rank", type=int, default=None)
    p.add_argument("--launcher", action="store_true", help="the supervisor's and accelerate launch's own log")
    p.add_argument("--attempt", type=int, default=None, metavar="N",
                   help="a restarted run's earlier attempt N (its logs are kept in attempts/N/)")
    p.add_argument("--follow", "-f", action="store_true")

    p = command("stacks", _lazy("tuitrain.cli.stacks", "cmd_stacks"), "every rank's Python stack (all threads), "
                "kept in the run directory, and a digest of where the ranks are: the one elsewhere first")
    _arguments_from("tuitrain.cli.stacks", "add_arguments", p)
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)

    p = command("checkpoints", viewing.cmd_checkpoints, "a run's checkpoints: step, complete or not, metrics, size")
    p.add_argument("run")
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)
    p.add_argument("--json", action="store_true")

    p = command("export", _lazy("tuitrain.cli.exporting", "cmd_export"),
                "write one of a run's checkpoints as a full model folder (a LoRA adapter merged into its base)")
    p.add_argument("run")
    p.add_argument("out", help="the folder to write (new or empty); of HOST:RUN, a folder on that workstation (a "
                               "relative one from your home there), written there")
    p.add_argument("--checkpoint", default="latest", help="latest (newest complete), checkpoint-N, or a path")
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)

    p = command("save", controlling.cmd_save, "ask a running run to save a checkpoint at the next step end")
    p.add_argument("run")
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)

    p = command("evaluate", controlling.cmd_evaluate, "ask a running run to evaluate at the next step end")
    p.add_argument("run")
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)

    p = command("stop", controlling.cmd_stop, "stop a run: save a checkpoint, then stop (--now: terminate, then kill)")
    p.add_argument("run")
    _arguments_from("tuitrain.cli.workstations", "add_host_option", p)
    p.add_argument("--now", action="store_true")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="a Slurm run: how long the stop may take before the job is cancelled (default 120; --now 15)")

    p = command("gpus", _lazy("tuitrain.cli.gpus", "cmd_gpus"), "the GPUs of this machine, their processes and CUDA numbering")
    p.add_argument("--json", action="store_true")
    p.add_argument("--watch", action="store_true", help="refresh every second until Ctrl-C")
    p.add_argument("--all-hosts", action="store_true",
                   help="this machine's GPUs, then those of every workstation of your settings, each sampled there")
    p.add_argument("--profile", default=None, metavar="PROFILE",
                   help="the GPUs of every machine of a multi-machine profile, each sampled there over ssh")
    _ssh_options(p)

    p = command("serve", _lazy("tuitrain.cli.serving", "cmd_serve"), "the app in a browser tab: listens on "
                "127.0.0.1 (reach it with ssh -L) and prints the page's URL with its token; Ctrl-C stops it")
    _arguments_from("tuitrain.cli.serving", "add_arguments", p)

    p = command("profile", _lazy("tuitrain.cli.profiles", "cmd_profile"), "profile tools: accelerate config export and import")
    p.add_argument("action", choices=["export-accelerate", "import-accelerate"])
    p.add_argument("file", help="the profile (export) or the accelerate YAML (import)")
    p.add_argument("--into", default=None, help="import: the profile to write (default: print the tables)")
    return parser


def _add_submit_arguments(p: argparse.ArgumentParser) -> None:
    _arguments_from("tuitrain.cli.submit", "add_arguments", p)


def _arguments_from(module: str, adder: str, p: argparse.ArgumentParser) -> None:
    """A command's arguments, added by the module that handles it (it keeps heavy imports inside its handlers)."""
    import importlib

    getattr(importlib.import_module(module), adder)(p)


class _LazyModule:
    """`module.cmd_x` gives a handler that imports the module only when the command runs."""

    def __init__(self, module: str) -> None:
        self.module = module

    def __getattr__(self, name: str):
        return _lazy(self.module, name)


def _lazy(module: str, name: str):
    """A handler imported only when its command runs (keeps `tuitrain --help` fast)."""

    def handler(args: argparse.Namespace) -> int:
        import importlib

        return getattr(importlib.import_module(module), name)(args)

    return handler


def _check_runs_root(root: Path) -> None:
    from tuitrain.runs.catalog import RunsRootError, runs_root_problem

    problem = runs_root_problem(root)
    if problem:
        raise RunsRootError(problem)


def _open_app(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """`tuitrain` with no command opens the Textual app; without a terminal (a script, a pipe)
    it prints the help instead of waiting on a screen nobody sees."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        parser.print_help()
        return 0
    try:
        from tuitrain.tui.app import run_app
    except ImportError:
        parser.print_help()
        return 0
    return run_app(runs_root=args.runs_root)


# The commands that read or write the runs root (plan, validate, gpus and profile do not need one).
RUNS_ROOT_COMMANDS = frozenset({"run", "resume", "submit", "runs", "status", "diff", "queue", "cancel", "stacks",
                                "logs", "checkpoints", "export", "save", "evaluate", "stop", "serve"})


def main(argv: Sequence[str] | None = None) -> int:
    from tuitrain.cli.errors import permission_line
    from tuitrain.errors import TuitrainError

    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.runs_root is None:
        args.runs_root = default_runs_root()
    if not getattr(args, "handler", None):
        return _open_app(args, parser)
    try:
        from tuitrain.cli import workstations

        remote = workstations.remote_target(args)
        if remote is not None:  # a run on another workstation: the same command runs there
            return workstations.cmd_remote(args, argv, *remote)
        if args.command in RUNS_ROOT_COMMANDS:
            _check_runs_root(args.runs_root)
        return args.handler(args)
    except TuitrainError as exc:  # every refusal, one place: tuitrain/errors.py
        print(f"tuitrain: error: {exc}", file=sys.stderr)
        return exc.code
    except PermissionError as exc:
        print(f"tuitrain: error: {permission_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
