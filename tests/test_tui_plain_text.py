"""Words from outside the app are shown as text, never read as markup (issue 34, item 1; the rule: tui/plain.py).

A run that failed with `no column [/data/train.csv:text]` killed the app on Home ~20 s later (MarkupError in a toast);
Home's filter `[/x]` did too; `[training]` vanished from toasts. Here: every call site in tuitrain/tui is held to the
rule (a new Static without markup=False, a DataTable, an f-string tab title fails), then generated words go through
each path of a running app, then a real run that fails with brackets in its words while Home is open."""

from __future__ import annotations

import ast
import asyncio
import json
import shutil
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conftest import cli, only_run, wait_until_ended
from test_tui_app import make_app, open_run, run, show_field, until
from test_tui_fixtures import FAILED, FINISHED, RUNNING, make_runs
from tuitrain.tui.plain import CONTROL, visible

TUI = Path(__file__).resolve().parents[1] / "tuitrain" / "tui"

# widgets that read a str as markup unless made with markup=False (a Static is a Words: widgets/words.py)
MARKUP_WIDGETS = {"Label", "OptionList"}
# calls whose first argument is shown as markup: our own constant words or plain(...)
TEXT_FIRST = {"Button", "TabPane", "Option", "Selection", "Tab", "RadioButton", "Checkbox"}
TEXT_KEYWORDS = {"tooltip", "prompt"}
TEXT_ATTRIBUTES = {"tooltip", "border_title", "border_subtitle", "sub_title"}
SAFE_CALLS = {"plain", "escaped", "Text", "Content", "visible_text"}
SAFE_METHODS = {("Text", "assemble"), ("Content", "assemble"), ("Content", "styled"), ("Text", "from_ansi")}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def safe(node: ast.expr | None) -> bool:
    """Text that no widget reads as markup: a constant of ours, or words made text (plain, Text, Content)."""
    if node is None or isinstance(node, ast.Constant):
        return not (isinstance(node, ast.Constant) and isinstance(node.value, str) and "[" in node.value)  # "[model.config]"
    if isinstance(node, ast.IfExp):
        return safe(node.body) and safe(node.orelse)
    if isinstance(node, ast.BoolOp):
        return all(safe(v) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in SAFE_CALLS
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return (func.value.id, func.attr) in SAFE_METHODS
    return False


def safe_options(node: ast.expr) -> bool:
    """A Select's (prompt, value) pairs: each prompt safe."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(safe_options(e) if isinstance(e, ast.Starred) else
                   isinstance(e, ast.Tuple) and safe(e.elts[0]) for e in node.elts)
    if isinstance(node, ast.Starred):
        return safe_options(node.value)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return isinstance(node.elt, ast.Tuple) and safe(node.elt.elts[0])
    return False


def rule_breaks(source: str, where: str, own: frozenset[str] = frozenset()) -> list[str]:
    """What in `source` breaks the rule; `own`: the app's widgets whose keywords are their own (a ListEditor's
    tooltip is made text inside it)."""
    out = []
    tree = ast.parse(source)
    aliases = {a.asname: a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names if a.asname}
    for node in ast.walk(tree):  # a widget of the file made from one of those is held alike (class Choice(RadioButton))
        if isinstance(node, ast.ClassDef):
            bases = {_name(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases}
            for kind in (*MARKUP_WIDGETS, "Static", "SelectionList", *TEXT_FIRST):
                if kind in bases:
                    aliases[node.name] = kind
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ClassDef):
            bases = {_name(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases}
            if "DataTable" in bases and node.name != "PlainTable":
                out.append(f"{line}: {node.name} is a DataTable, not a PlainTable")
            if "Static" in bases and node.name != "Words":
                out.append(f"{line}: {node.name} is a Static, not a Words")
            if "Input" in bases and node.name != "Field":
                out.append(f"{line}: {node.name} is an Input, not a Field")
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr in TEXT_ATTRIBUTES and not safe(node.value):
                    out.append(f"{line}: .{target.attr} = words not made text (plain)")
        if not isinstance(node, ast.Call):
            continue
        name = aliases.get(_name(node.func), _name(node.func))
        keywords = {k.arg: k.value for k in node.keywords}
        if name in MARKUP_WIDGETS:
            markup = keywords.get("markup")
            if not (isinstance(markup, ast.Constant) and markup.value is False):
                out.append(f"{line}: {name}(…) without markup=False")
        if name == "DataTable":
            out.append(f"{line}: a DataTable, not a PlainTable")
        if name == "Static" and "words.py" not in where:
            out.append(f"{line}: a Static, not a Words")
        if name == "Input" and "field.py" not in where:
            out.append(f"{line}: an Input, not a Field")
        if name in TEXT_FIRST and node.args and not safe(node.args[0]):
            out.append(f"{line}: {name}'s words not made text (plain)")
        if name == "Select" and node.args and not safe_options(node.args[0]):
            out.append(f"{line}: Select's prompts not made text (plain)")
        if name == "SelectionList" and not safe_options(ast.List(elts=node.args)):
            out.append(f"{line}: SelectionList's prompts not made text (plain)")
        if name in ("replace_option_prompt", "replace_option_prompt_at_index") and not safe(node.args[1]):
            out.append(f"{line}: an option's words not made text (plain)")
        if name in ("from_markup", "render_str") and node.args and not isinstance(node.args[0], ast.Constant):
            out.append(f"{line}: markup made from words")
        for key in TEXT_KEYWORDS & set(keywords) if name != "Binding" and name not in own else ():  # a key's words: ours
            if not safe(keywords[key]):
                out.append(f"{line}: {key}= words not made text (plain)")
    return out


def own_widgets(paths: list[Path]) -> frozenset[str]:
    """The app's own widget classes that are none of Textual's text widgets (their keywords are theirs)."""
    held = {*MARKUP_WIDGETS, "Static", "SelectionList", *TEXT_FIRST, "Select", "Input", "DataTable", "PlainTable"}
    return frozenset(node.name for path in paths for node in ast.walk(ast.parse(path.read_text()))
                     if isinstance(node, ast.ClassDef)
                     and not held & {_name(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases})


def test_every_call_site_shows_words_as_text():
    paths = sorted(TUI.rglob("*.py"))
    own = own_widgets(paths)
    breaks = [b for path in paths for b in rule_breaks(path.read_text(), str(path.relative_to(TUI)), own)]
    assert breaks == [], "\n".join(breaks)


def test_the_rule_catches_what_it_is_for():
    bad = """
Static(f"Launch {stem}  [dim]{where}[/]")
class Pane(Static): pass
Label(name)
DataTable(id="t")
class Mine(DataTable): pass
TabPane(machine.host, id="x")
Button(f"remove [{key}]")
Select([(host, host) for host in hosts])
widget.tooltip = doc
Input(tooltip=f.doc)
class Box(Input): pass
Content.from_markup(cause)
"""
    assert len(rule_breaks(bad, "bad")) == 13  # Input(tooltip=f.doc) twice: not a Field, words not made text
    good = """
Words(Text.assemble(f"Launch {stem}  ", (where, "dim")))
Label(plain(name), markup=False)
TabPane(plain(machine.host), id="x")
Button("Cancel")
Select([("this machine", ""), *((plain(host), host) for host in hosts)])
widget.tooltip = plain(doc) if doc else None
Field(tooltip=None)
Content.from_markup("[b]ours[/b]")
"""
    assert rule_breaks(good, "good") == []


# ------------------------------------------------------------------------------ in a running app

KNOWN = [
    "no column [/data/train.csv:text] in the file",
    "Connection closed by peer [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152]",
    "fix the [training] keys it names", "[b]bold[/b]", "[@click=app.quit]quit[/]", "[/]", "[", "]", "\\[x]",
    "\x1b[31mred\x1b[0m", "\x1b]0;a title\x07", "\x1b[2J\x1b[H", "bell\x07 nul\x00 del\x7f csi\x9b",
]
PIECES = ["[", "]", "/", "@", "=", "b", " ", "\\", "x", ":", ".", "\x1b", "\x07", "\x00", "\t", "\n", "é", "字",
          "[/", "[b]", "[@click=app.quit]", "\x1b[31m", "[/x]"]
WORDS = st.one_of(
    st.sampled_from(KNOWN),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=30).map("".join),
    st.text(min_size=1, max_size=40),
    st.tuples(st.sampled_from(["[/x] ", "a[b]c ", "\x1b[2J "]), st.integers(100, 2000)).map(lambda t: t[0] * t[1]),  # to 10 kB
)
EXAMPLES = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None,
                    phases=[Phase.explicit, Phase.generate])  # a failing case as found: an app a try is too slow to shrink


def squash(text: str) -> str:
    return "".join(text.split())


def plain_of(widget) -> str:
    """What a widget shows, as text (Content or Text: .plain)."""
    rendered = widget.render()
    return getattr(rendered, "plain", str(rendered))


def shows(widget, words: str) -> bool:
    """The widget shows the words as they are (their first 80 characters, control characters as pictures)."""
    return squash(visible(words)[:80]) in squash(plain_of(widget))


def no_control_characters_painted(app) -> None:
    """Nothing the screen paints holds a control character: an escape sequence in a run's words never reaches
    the terminal."""
    from textual.geometry import Region

    for widget in app.screen.walk_children(with_self=False):
        if not widget.display or not widget.size.area:
            continue
        for strip in widget.render_lines(Region(0, 0, widget.size.width, widget.size.height)):
            text = strip.text
            assert not CONTROL.search(text), (widget, text)


def toasts(app) -> list:
    from textual.widgets._toast import Toast

    return list(app.screen.query(Toast))


def file_name(words: str) -> str:
    """Words as a file's name can hold them (no slash, no NUL), never empty, never hidden."""
    name = words.replace("/", "").replace("\x00", "")[:100].strip()
    return "p" + name if not name or name.startswith(".") else name


@EXAMPLES
@given(data=st.data())
def test_home_shows_a_runs_cause_a_hosts_problem_a_profile_and_the_filter_as_text(tmp_path_factory, data):
    from tuitrain.profile import builtin_profile_path
    from tuitrain.tui.messages import WorkstationHeard, WorkstationsListed
    from tuitrain.tui.run_table import HostRuns

    cause, problem, name, typed, swept = (data.draw(WORDS, label=label)
                                          for label in ("cause", "problem", "profile", "filter", "a sweep run's name"))
    base = tmp_path_factory.mktemp("home")
    made = make_runs(base / "runs")
    path = made[FINISHED] / "run.json"  # a sweep's run: Home labels it by its name, its values whole
    record = json.loads(path.read_text())
    record.update(profile=swept, queue={"sweep": {"id": "s1", "index": 0, "of": 1, "label": swept}})
    path.write_text(json.dumps(record))
    (base / "profiles").mkdir()
    shutil.copy(builtin_profile_path(), base / "profiles" / f"{file_name(name)}.toml")
    app = make_app(base)

    async def script(pilot):
        home = app.screen
        await until(pilot, lambda: FINISHED in home.labels, what="the sweep run's label")
        path = base / "runs" / RUNNING / "run.json"  # the run fails, its cause in the words (as a supervisor writes it)
        record = json.loads(path.read_text())
        record.update(status="failed", failed_rank=0, ended=record["created"] + 100, error=cause)
        path.write_text(json.dumps(record))
        toast = await until(pilot, lambda: next((t for t in toasts(app) if "Run failed" in plain_of(t)), None),
                            what="the failure's toast")
        assert shows(toast, cause), plain_of(toast)
        options = home.query_one("#profiles")
        await until(pilot, lambda: options.option_count > 1, what="the profile")
        home.post_message(WorkstationsListed(["box"]))  # a workstation that cannot be watched: why, under the table
        home.post_message(WorkstationHeard("box", HostRuns(problem=problem, answered=True)))
        box = home.query_one("#host-problems")
        await until(pilot, lambda: box.display, what="the host's problem")
        assert shows(box, problem), plain_of(box)
        await pilot.press("slash")
        home.query_one("#runs-filter").value = typed
        await pilot.press("enter")
        table = home.query_one("#runs")
        if table.row_count == 0:  # enter on the emptied table: the hint names the filter
            await pilot.press("enter")
            hint = await until(pilot, lambda: next((t for t in toasts(app) if "escape clears" in plain_of(t)), None),
                               what="the filter's hint")
            assert shows(hint, typed.strip()), plain_of(hint)
        await pilot.pause(0.2)
        no_control_characters_painted(app)

    run(script, app, size=(120, 40), notifications=True)


@EXAMPLES
@given(data=st.data())
def test_the_monitor_shows_a_failed_runs_cause_its_log_and_a_search_as_text(tmp_path_factory, data):
    cause, line, term = (data.draw(WORDS, label=label) for label in ("cause", "log line", "search"))
    base = tmp_path_factory.mktemp("monitor")
    made = make_runs(base / "runs")
    path = made[FAILED] / "run.json"
    record = json.loads(path.read_text())
    record.update(error=cause)
    path.write_text(json.dumps(record))
    with open(made[FAILED] / "logs" / "rank-1.log", "a", encoding="utf-8") as log:
        log.write(line.replace("\n", " ") + "\n")
    app = make_app(base)

    async def script(pilot):
        monitor = await open_run(pilot, app, FAILED)
        header = monitor.query_one("#header")
        await until(pilot, lambda: "failed" in plain_of(header), what="the header")
        await pilot.press("slash")
        monitor.query_one("#search").value = term
        await pilot.press("enter")
        await pilot.pause(0.3)
        for tab in ("tab-checkpoints", "tab-metrics", "tab-gpus", "tab-all"):
            monitor.query_one("#tabs").active = tab
            await pilot.pause(0.1)
            no_control_characters_painted(app)

    run(script, app, size=(120, 40), notifications=True)


@EXAMPLES
@given(data=st.data())
def test_the_launch_dialog_and_the_editor_show_typed_words_as_text(tmp_path_factory, data):
    from textual.widgets import Input

    from tuitrain.profile import builtin_profile_path

    overrides, value = data.draw(WORDS, label="overrides"), data.draw(WORDS, label="run.name")
    base = tmp_path_factory.mktemp("typed")
    make_runs(base / "runs")
    (base / "profiles").mkdir()
    profile = base / "profiles" / "mine.toml"
    shutil.copy(builtin_profile_path(), profile)
    app = make_app(base)

    async def script(pilot):
        from tuitrain.tui.screens.launch import LaunchScreen

        app.push_screen(LaunchScreen(profile))
        dialog = await until(pilot, lambda: app.screen if isinstance(app.screen, LaunchScreen) and app.screen.query("#overrides")
                             else None, what="the launch dialog")
        dialog.query_one("#overrides", Input).value = overrides
        await until(pilot, lambda: plain_of(dialog.query_one("#plan")) != "planning…", 60, "the plan")
        await pilot.pause(0.3)
        no_control_characters_painted(app)
        await pilot.press("escape")
        app.open_editor(profile)
        editor = await until(pilot, lambda: app.screen if getattr(app.screen, "loaded", False) else None, 60, "editor")
        box = (await show_field(pilot, editor, "run.name")).query_one(Input)

        def edited() -> bool:
            if editor.dirty:
                return True
            box.value, box.value = "", value  # (again: a row takes edits once it is armed)
            return False

        if value.strip() not in ("", "demo"):
            await until(pilot, edited, what="the edit")
        editor.revalidate()
        await pilot.pause(1.0)
        no_control_characters_painted(app)

    run(script, app, size=(120, 40), notifications=True)


def test_a_real_run_failing_with_brackets_in_its_words_leaves_home_standing(tmp_path, runs_dir):
    """The issue's run: started from the CLI while the app sits on Home, it fails with `[/data/train.csv:text]` in
    its error; the app says so in a toast, words and all, and goes on (it died of a MarkupError ~20 s later)."""
    words = "no column [/data/train.csv:text] in the file"
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "train.py").write_text(f"raise ValueError({words!r})\n")
    profile = folder / "train.toml"
    profile.write_text('[script]\npath = "train.py"\nargs = []\n\n[hardware]\naccelerator = "cpu"\n')
    app = make_app(tmp_path)

    async def script(pilot):
        started = await asyncio.to_thread(cli, "run", str(profile), "--detach", runs_dir=runs_dir)
        assert started.returncode == 0, started.stdout + started.stderr
        toast = await until(pilot, lambda: next((t for t in toasts(app) if "Run failed" in plain_of(t)), None), 240,
                            "the failure's toast")
        assert words in plain_of(toast), plain_of(toast)
        await pilot.pause(1.0)
        assert type(app.screen).__name__ == "HomeScreen" and app.is_running
        no_control_characters_painted(app)

    run(script, app, size=(120, 40), notifications=True)
    assert wait_until_ended(only_run(runs_dir))["status"] == "failed"
