"""Every command and key the docs name exists (issue 38, "the manual"): each `tuitrain VERB --flag` written in code in
the README or docs/ is a verb of the real parser with that option, and each key in the guide's tables of a screen's
keys is in that screen's BINDINGS (or those of a widget on it, or the app's). Read from the code, not a copy of it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from textual.binding import Binding

from tuitrain.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
REFERENCE = REPO / "docs" / "guide" / "reference.md"


def _code_in(text: str) -> list[str]:
    """The code a page holds: each line of its fenced and indented blocks, and each inline span (one that runs over a
    line break joined into one line)."""
    code: list[str] = []
    prose: list[str] = []
    fenced = False
    previous_blank = True
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced or (line.startswith("    ") and previous_blank and line.strip()):
            code.append(line)
            continue
        else:
            prose.append(line)
        previous_blank = not line.strip() or (previous_blank and line.startswith("    "))
    spans = re.findall(r"(?<!`)`([^`]+)`(?!`)", "\n".join(prose))
    return code + [span.replace("\n", " ") for span in spans]


def _commands_in(text: str, verbs: frozenset[str] = frozenset()) -> list[tuple[str, list[str]]]:
    """Each `tuitrain VERB ...` written in code, and each span that starts with a verb and names a flag (`stop --now`):
    the verb and the --flags that follow it in the same command."""
    found = []
    for code in _code_in(text):
        code = code.split(" #")[0]  # a block's comment is prose
        if code.split(" ")[0] in verbs and " --" in code:
            code = "tuitrain " + code
        for start in re.finditer(r"(?:^|(?<=[\s/(`]))tuitrain (?=[a-z])", code):
            if not _runs_the_command(code[:start.start()]):
                continue  # an argument named tuitrain (a benchmark's variant), not the command
            piece = re.split(r"\s\|\s|;|&&|\)", code[start.end():])[0]  # a pipe, not latest|checkpoint-N
            verb = piece.split()[0]
            found.append((verb, re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", piece)))
    return found


def _runs_the_command(before: str) -> bool:
    """What comes before `tuitrain` on its line leaves it the command: nothing, a prompt, `python -m`, a path, or the
    end of another command."""
    words = before.split()
    return not words or before.endswith(("/", "`")) or words[-1] in {"$", "-m", "&&", ";", "|", "(", "exec", "then", "do"}


def _verbs() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def test_every_command_the_docs_name_is_in_the_parser():
    verbs = _verbs()
    root = _options(build_parser())
    wrong = []
    for page in DOCS:
        for verb, flags in _commands_in(page.read_text(encoding="utf-8"), frozenset(verbs)):
            where = page.relative_to(REPO)
            if verb not in verbs:
                wrong.append(f"{where}: `tuitrain {verb}` is no command")
                continue
            wrong += [f"{where}: `tuitrain {verb}` has no {flag}" for flag in flags
                      if flag not in _options(verbs[verb]) | root]
    assert wrong == []


def test_the_reference_lists_every_command():
    listed = {verb for verb, _ in _commands_in(REFERENCE.read_text(encoding="utf-8"))}
    assert set(_verbs()) - listed == set()


def test_the_check_reads_commands_as_written():
    text = ("Run `tuitrain run demo --detach` (or `tuitrain\nqueue --expand`).\n\n```\n"
            "tuitrain logs RUN [--rank K] --follow   # --not-a-flag in a comment\n```\n")
    assert _commands_in(text) == [("logs", ["--rank", "--follow"]), ("run", ["--detach"]), ("queue", ["--expand"])]
    assert _commands_in("`stop RUN --now`, `export`", frozenset({"stop", "export"})) == [("stop", ["--now"])]
    assert _commands_in("```\n$ python bench.py --only plain tuitrain tuitrain-accelerate --rounds 3\n```") == []


def _screens() -> dict[str, list[type]]:
    """A heading of the keys page -> the classes whose BINDINGS hold that screen's keys."""
    from textual.screen import Screen

    from tuitrain.tui.app import TuitrainApp
    from tuitrain.tui.screens.check import CheckScreen
    from tuitrain.tui.screens.compare import CompareScreen
    from tuitrain.tui.screens.editor import EditorScreen
    from tuitrain.tui.screens.gpus import GpusScreen
    from tuitrain.tui.screens.home import HomeScreen
    from tuitrain.tui.screens.launch import LaunchScreen
    from tuitrain.tui.screens.monitor import MonitorScreen
    from tuitrain.tui.screens.queue import QueueScreen
    from tuitrain.tui.screens.stacks import StacksScreen
    from tuitrain.tui.widgets.gpu_picker import GpuList
    from tuitrain.tui.widgets.log_view import LogView
    from tuitrain.tui.widgets.machine_card import MachineCard

    return {
        "Everywhere": [TuitrainApp, Screen],
        "Home": [HomeScreen],
        "Run monitor": [MonitorScreen, LogView],
        "Compare": [CompareScreen],
        "Profile editor": [EditorScreen, GpuList, MachineCard],
        "Launch dialog": [LaunchScreen],
        "GPUs": [GpusScreen],
        "Stacks": [StacksScreen],
        "Check a profile": [CheckScreen],
        "Queues": [QueueScreen],
    }


def _bound_keys(classes: list[type]) -> set[str]:
    keys = {cls.COMMAND_PALETTE_BINDING for cls in classes if hasattr(cls, "COMMAND_PALETTE_BINDING")}
    for cls in classes:
        for binding in getattr(cls, "BINDINGS", []):
            if isinstance(binding, Binding):
                keys |= {k.strip() for k in binding.key.split(",")}
                if binding.key_display:
                    keys.add(binding.key_display)
            elif isinstance(binding, tuple):
                keys |= {k.strip() for k in binding[0].split(",")}
    return keys


_NAMES = {"/": "slash", "?": "question_mark", "&": "ampersand", "]": "right_square_bracket",
          "[": "left_square_bracket", "End": "end", "Home": "home"}


def _key_tables(text: str) -> dict[str, list[str]]:
    """### heading -> the keys in the first column of its table (`a` / `b` names two keys)."""
    tables: dict[str, list[str]] = {}
    heading = None
    for line in text.splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
        elif heading and line.startswith("| `"):
            cell = line.split("|")[1]
            tables.setdefault(heading, []).extend(re.findall(r"`([^`]+)`", cell))
    return tables


def test_every_key_of_a_screen_in_the_guide_is_bound_there():
    screens = _screens()
    tables = _key_tables(REFERENCE.read_text(encoding="utf-8"))
    assert set(tables) == set(screens), "a keys table whose screen the test does not know, or a screen without one"
    unbound = []
    for heading, keys in tables.items():
        bound = _bound_keys(screens[heading])
        unbound += [f"{heading}: `{key}`" for key in keys if key not in bound and _NAMES.get(key, key) not in bound]
    assert unbound == []


_KEY_SHAPED = re.compile(r"^(?:(?:ctrl|alt|shift)\+\S+|[A-Za-z0-9/?&\[\]]|enter|escape|space|tab|End|Home)$")


def _every_binding_class() -> list[type]:
    import importlib
    import inspect
    import pkgutil

    import tuitrain.tui

    classes = []
    for module in pkgutil.walk_packages(tuitrain.tui.__path__, "tuitrain.tui."):
        members = inspect.getmembers(importlib.import_module(module.name), inspect.isclass)
        classes += [cls for _, cls in members if "BINDINGS" in vars(cls)]
    return classes


def test_every_key_the_guide_names_in_its_prose_is_bound_somewhere():
    """A key the guide's prose names (`z` toggles, `ctrl+t` shows) is one some screen, widget or the app binds: the
    tables above check each screen's own; this catches a key the prose still names after it went."""
    bound = _bound_keys(_every_binding_class() + [cls for classes in _screens().values() for cls in classes])
    guide = [REPO / "README.md", *sorted((REPO / "docs" / "guide").glob("*.md"))]
    unbound = [f"{page.relative_to(REPO)}: `{key}`" for page in guide for code in _code_in(page.read_text("utf-8"))
               for key in code.split(" / ") if _KEY_SHAPED.match(key) and _NAMES.get(key, key) not in bound
               and key not in bound]
    assert unbound == []


@pytest.mark.parametrize("key", ["f13", "ctrl+backslash"])
def test_a_key_no_screen_binds_is_caught(key):
    assert key not in _bound_keys(_screens()["Home"])


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_docs_lands():
    broken = []
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
            elif anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.M)
                if anchor not in {_anchor(h) for h in headings}:
                    broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []
