"""One root for every refusal (tuitrain/errors.py): each exception class of ours derives from `TuitrainError` or is
named here as an internal signal, so a new refusal cannot slip past the front ends' one catch each; and a refusal
reaches the user as one line from the CLI and as one toast, as text, from the app."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest
from textual import work
from textual.screen import Screen

from conftest import check_clean, cli
from test_tui_app import make_app, run, until
from test_tui_fixtures import FINISHED, make_runs
from tuitrain.errors import TuitrainError
from tuitrain.tui.failed_work import PassesFailedWorkUp

PACKAGE = Path(__file__).resolve().parents[1] / "tuitrain"
ROOT = "TuitrainError"

# Exceptions that are signals inside one module or one process, caught where they are raised and never shown to a
# person as they are; each with where it ends. The test fails on an entry no longer defined, so the list stays true.
INTERNAL = {
    "_NoError": "hardware.nvml: stands for the error class of a library that has none; never raised",
    "_Lost": "hardware.nvml: a GPU that answered GPU_IS_LOST, caught by device_call",
    "_FallbackNVMLError": "hardware.recorded: pynvml's NVMLError as a recorded table raises it, caught as NVML's own",
    "_Refused": "launch.model_size: a config key the count needs, made the estimate's Unknown with its reason",
    "BadLine": "profile.datafiles: a data file's bad line, made a Problem of the profile where the file is read",
    "TrainingArgsProbeError": "profile.training_args: the probe's failure, kept as a note; the shipped table serves",
    "WireError": "remote.wire: a line that is no message of ours (a shell's welcome text), skipped by its readers",
    "MirrorError": "runs.mirror: a node's message that would write outside the run, logged by the home supervisor",
    "DumpError": "runs.nccl_trace: an unreadable flight recorder dump, that rank's `problem` in the digest",
    "RunDirectoryGone": "runs.supervisor: the keeper's abort when its run directory is removed under it",
}


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _classes() -> dict[str, tuple[str, list[str]]]:
    """Every class under tuitrain/: name -> (where, its bases' names)."""
    found: dict[str, tuple[str, list[str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[node.name] = (f"{path.relative_to(PACKAGE.parent)}:{node.lineno}", [_base_name(b) for b in node.bases])
    return found


def _is_builtin_exception(name: str) -> bool:
    kind = getattr(builtins, name, None)
    return isinstance(kind, type) and issubclass(kind, BaseException)


def exception_classes() -> tuple[dict[str, str], set[str]]:
    """(every exception class of ours: name -> where, the names of those that derive from TuitrainError), by
    following bases through our own classes (a library's error: a base named ...Error or ...Exception)."""
    classes = _classes()
    exceptions: set[str] = set()
    rooted = {ROOT}
    changed = True
    while changed:
        changed = False
        for name, (_where, bases) in classes.items():
            if name not in exceptions and any(b in exceptions or _is_builtin_exception(b) or b.endswith(("Error", "Exception"))
                                              for b in bases):
                exceptions.add(name)
                changed = True
            if name not in rooted and any(b in rooted for b in bases):
                rooted.add(name)
                changed = True
    return {name: classes[name][0] for name in exceptions if name != ROOT}, rooted


def test_every_exception_of_ours_is_a_refusal_or_a_named_internal_signal() -> None:
    exceptions, rooted = exception_classes()
    assert "ProfileError" in rooted and "UserConfigError" in rooted and "BadLine" in exceptions  # the scan sees them
    loose = [f"{where} {name}" for name, where in sorted(exceptions.items()) if name not in rooted and name not in INTERNAL]
    assert loose == [], ("derive each from tuitrain.errors.TuitrainError (a refusal a person reads), or name it in "
                         "INTERNAL with where it is caught")
    assert sorted(set(INTERNAL) - set(exceptions)) == []  # no stale entry
    assert sorted(set(INTERNAL) & rooted) == []  # a signal that became a refusal leaves the list


def test_no_module_keeps_a_list_of_refusals() -> None:
    """A refusal is caught as `TuitrainError` (once in each front end, or where a screen or an agent says it in its
    own place), or as the one kind a call raises; never as a tuple of kinds that the next new kind would miss."""
    _exceptions, rooted = exception_classes()
    lists = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Tuple):
                named = [_base_name(e) for e in node.type.elts if _base_name(e) in rooted - {ROOT}]
                if len(named) > 1:
                    lists.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {named}")
    assert lists == []


def test_a_cli_refusal_is_one_line_on_stderr(tmp_path: Path) -> None:
    """`tuitrain stacks` of an ended run: its StacksError reaches `main`'s one catch (no conversion of its own)."""
    runs = tmp_path / "runs"
    make_runs(runs)
    done = cli("stacks", FINISHED, runs_dir=runs)
    check_clean(done, f"run {FINISHED} is finished: only a live run has stacks to take")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"tuitrain: error: run {FINISHED} is finished: only a live run has stacks to take"]


def test_an_app_refusal_is_one_toast_of_plain_text(tmp_path: Path) -> None:
    """Home's `t` on an ended run: queue_action's refusal, titled with what could not be done; the run's folder
    name, markup to Textual, is shown as typed."""
    runs = tmp_path / "runs"
    make_runs(runs)
    odd = runs / f"{FINISHED}-[b]x[red]"
    (runs / FINISHED).rename(odd)
    app = make_app(tmp_path)

    async def script(pilot) -> None:
        table = app.screen.query_one("#runs")
        keys = await until(pilot, lambda: [table.coordinate_to_cell_key((i, 0)).row_key.value
                                           for i in range(table.row_count)] if table.row_count else None, what="the runs")
        table.move_cursor(row=keys.index(odd.name))
        await pilot.press("t")
        toast = await until(pilot, lambda: next((n for n in app._notifications if n.title == "Cannot move"), None),
                            what="the refusal")
        assert toast.message == f"run {odd.name} already ended (finished); there is nothing to move"
        assert not toast.markup

    run(script, app, size=(120, 40), notifications=True)


def test_a_refusal_no_screen_says_is_the_apps_one_toast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's own worker (the hardware strip's sampler) on a recorded device table that is not there: its
    RecordedTableError is one toast of its own words, as text (it was 'RecordedTableError: …' as markup)."""
    make_runs(tmp_path / "runs")
    table = tmp_path / "gpus [b]x[red].json"
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(table))
    app = make_app(tmp_path, hardware_line=None)

    async def script(pilot) -> None:
        toast = await until(pilot, lambda: next((n for n in app._notifications if n.title == "Refused"), None),
                            what="the refusal")
        assert toast.message.startswith(f"TUITRAIN_NVML_TABLE={table}: no such file; point it at a recorded")
        assert "\n" not in toast.message and "Error" not in toast.message
        assert not toast.markup

    run(script, app, size=(120, 40), notifications=True)


class Refusing(PassesFailedWorkUp, Screen):
    """A screen whose worker refuses, as any screen's may: Textual tells only this screen of it."""

    def on_mount(self) -> None:
        self.refuse()

    @work(thread=True, exit_on_error=False)
    def refuse(self) -> None:
        raise TuitrainError("[b]runs[/b] is full")


def test_a_screens_worker_that_refuses_reaches_the_apps_one_toast(tmp_path: Path) -> None:
    make_runs(tmp_path / "runs")
    app = make_app(tmp_path)

    async def script(pilot) -> None:
        await app.push_screen(Refusing())
        toast = await until(pilot, lambda: next((n for n in app._notifications if n.title == "Refused"), None),
                            what="the refusal")
        assert toast.message == "[b]runs[/b] is full" and not toast.markup

    run(script, app, size=(120, 40), notifications=True)
