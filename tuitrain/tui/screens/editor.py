"""Profile editor: a form a section, the right widget a key, the validator's words beside each
field, and a live preview of what would run (command line, environment, accelerate YAML).

The screen draws an `EditorModel` (tuitrain/tui/editor_model.py: the profile as written, its
checks, its plan, whether it changed, where it saves) and runs the model's blocking steps in
workers: every change is validated and planned by the profile and launch layers, saving goes
through `save_profile` (atomic; a hand-edited file keeps its comments, key order and layout).

(Over 600 lines: one screen's rows, check cycle, saving and launching, all over the one model it
draws; which field a key gets is `tui.form_fields`, the preview's words `tui.plan_preview`.)
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Input, Label, SelectionList, Static, TabbedContent, TabPane

from tuitrain.profile.schema import SCHEMA, KeySpec, TableSpec
from tuitrain.tui.editor_model import Check, EditorModel, Loaded, LoadError
from tuitrain.tui.failed_work import PassesFailedWorkUp
from tuitrain.tui.fields import REMOVE, FieldDef, parse_value
from tuitrain.tui.form_fields import TRAINING_FIELDS, field_for, training_field
from tuitrain.tui.plain import plain, problem_lines
from tuitrain.tui.plan_preview import plan_text
from tuitrain.tui.profile_edits import machine_path
from tuitrain.tui.quit_safe import QuitSafe
from tuitrain.tui.save_as import SAVE_AS_QUESTION, change_notes, with_changes
from tuitrain.tui.widgets.field import Field
from tuitrain.tui.widgets.field_row import FieldRow
from tuitrain.tui.widgets.gpu_picker import GpuList, GpuPicker, busy_note, cuda_labels
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.machine_card import MachineCard
from tuitrain.tui.widgets.tabs import SteadyTabbedContent
from tuitrain.tui.widgets.words import Words

if TYPE_CHECKING:
    from textual import getters
    from textual.timer import Timer

    from tuitrain.tui.app_api import TuitrainAppApi
    from tuitrain.tui.command_fold import WithCommands

# [distributed] keys the machines section shows (not the strategy's fields, nor left over from one)
MACHINES_SECTION_KEYS = ("network_interface", "machines")
SECTIONS = ("run", "model", "data", "training", "metrics", "hardware", "distributed", "logging")
class EditorScreen(PassesFailedWorkUp, QuitSafe, Screen):
    if TYPE_CHECKING:  # for the checker only: self.app is this package's app, with its attributes
        app = getters.app(TuitrainAppApi)

    CSS_PATH = "editor.tcss"
    check_delay = 0.2  # seconds of quiet after a change before the profile is checked again
    HELP_TITLE = "Profile editor"
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", tooltip="Save the profile (atomically, keeping its comments and layout)"),
        Binding("ctrl+o", "save_as", "Save as", tooltip="Save the profile under another name"),
        Binding("ctrl+r", "launch", "Launch", tooltip="Launch this profile as it is in the form"),
        # the section keys before the rest: at 80 columns the key bar keeps its first keys (the tab bar's own
        # left/right work once it has the focus; these work from any field)
        # priority: a field that scrolls (the GPU list) binds these keys too, and would take them
        Binding("ctrl+pagedown", "section(1)", "Next section", priority=True, tooltip="Next section (ctrl+pagedown); "
                "ctrl+pageup goes back, as left/right do on the section tabs"),
        Binding("ctrl+pageup", "section(-1)", "Previous section", show=False, priority=True,
                tooltip="Previous section (ctrl+pageup)"),
        Binding("escape", "back", "Back", tooltip="Back to the home screen (asks when there are unsaved changes)"),
        Binding("ctrl+y", "copy_command", "Copy run command",
                tooltip="Copy `tuitrain run PROFILE` (unsaved changes as --set), to start this run from a shell"),
        Binding("ctrl+g", "copy_accelerate", "Copy accelerate command", show=False,
                tooltip="Copy the accelerate launch command line of the preview"),
        Binding("ctrl+f", "export_accelerate", "Export accelerate config", show=False,
                tooltip="Write the accelerate config of the form to a file (as `tuitrain profile export-accelerate`)"),
    ]

    def __init__(self, path: Path | None, accelerate_config: Path | None = None) -> None:
        """`accelerate_config`: a new profile whose [distributed] and [hardware] come from that
        accelerate config file (the rest from the built-in demo)."""
        super().__init__()
        self.model = EditorModel(path, self.app.cwd, accelerate_config)
        self.rows: dict[str, FieldRow] = {}  # the fields mounted so far, by dotted key
        self._check_timer: Timer | None = None
        self.populated: set[str] = set()  # the sections whose forms are built
        # what an edit last showed beside the fields and in the GPU picker: an edit that changes neither (most of
        # them, a paste too) asks no query of the form (each edit walked every row)
        self._ignored_shown: dict[str, str] | None = None
        self._gpus_shown: tuple[list[str], list[str]] | None = None

    # what the app (an unsaved editor holds the quit) and the tests read: the model's state
    @property
    def path(self) -> Path | None:
        return self.model.path

    @property
    def data(self) -> dict[str, Any]:
        return self.model.data

    @property
    def dirty(self) -> bool:
        return self.model.dirty

    @property
    def loaded(self) -> bool:
        return self.model.loaded

    @property
    def problems(self) -> list[Any]:
        return self.model.problems

    @property
    def errors(self) -> list[Any]:
        return self.model.errors

    @property
    def command(self) -> str:
        return self.model.command

    # ------------------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Words(self._title(), classes="title-bar", id="title")
        yield Words("", id="notice", classes="hint")
        with Horizontal(id="start-bar"):
            yield Words("or start from", classes="start-label")
            yield Button("a pretrained model folder…", id="start-model", compact=True,
                         tooltip=plain("Fine-tune a model folder (or Hub id): its tokenizer, no [model.config]"))
            yield Button("data files…", id="start-data", compact=True,
                         tooltip="Train on your train (and validation) files instead of generated data")
        with Horizontal(id="editor-body"):
            with SteadyTabbedContent(id="sections"):
                for section in SECTIONS:
                    with TabPane(plain(section.capitalize()), id=f"sec-{section}"):
                        yield VerticalScroll(id=f"form-{section}")
            with VerticalScroll(id="preview"):
                yield Words("", id="problems")
                yield Words("", id="plan")
        yield KeyBar()

    def _title(self) -> str:
        path = self.model.path
        where = self.app.show_path(path) if path else "new profile (not saved yet)"
        return f"profile editor · {where}" + (" · modified" if self.dirty else "")

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="editor-load", exit_on_error=False)
    def load(self) -> None:
        try:
            loaded = self.model.read()
        except LoadError as exc:
            self.app.call_from_thread(self._cannot_load, str(exc))
            return
        # textual types the callback `T | Awaitable[T]`, which mypy cannot solve for a coroutine function
        self.app.call_from_thread(self._loaded, loaded)  # type: ignore[arg-type]

    def _cannot_load(self, why: str) -> None:
        self.query_one("#notice", Static).update(Text(f"cannot edit in the form: {why}", style="red"))

    async def _loaded(self, loaded: Loaded) -> None:
        model = self.model
        model.take(loaded)
        notice = model.notice
        self.query_one("#notice", Static).update(Text(notice))  # plain text: "[distributed]" is no markup
        self.query_one("#notice", Static).display = bool(notice)
        self.query_one("#start-bar").display = model.brand_new
        await self._populate(self.query_one("#sections", TabbedContent).active.removeprefix("sec-"))
        self.query_one("#sections Tabs").focus()
        self.revalidate()

    async def _populate(self, section: str) -> None:
        """A section's form is built the first time it is shown (a few dozen widgets, not hundreds)."""
        if not self.loaded or section in self.populated or section not in SECTIONS:
            return
        self.populated.add(section)
        await self.query_one(f"#form-{section}", VerticalScroll).mount_all(self._section_rows(section))
        self._plugin_rows_follow_the_json()
        self._apply_problems()
        self._show_ignored()

    async def _rebuild(self, *sections: str) -> None:
        """Build again the forms of `sections` already built (tables were removed or added)."""
        for section in sections:
            if section not in self.populated:
                continue
            form = self.query_one(f"#form-{section}", VerticalScroll)
            self._forget_rows(form)
            await form.remove_children()
            await form.mount_all(self._section_rows(section))
        self._plugin_rows_follow_the_json()
        self._apply_problems()
        self._show_ignored()

    def _show_ignored(self, if_changed: bool = False) -> None:
        """Beside each key (or table) that the chosen model or data source makes the engine ignore, why.
        `if_changed`: only when that differs from what was shown last (a form just built is always shown)."""
        ignored = self.model.ignored_keys()
        if if_changed and ignored == self._ignored_shown:
            return
        self._ignored_shown = ignored
        for key, row in self.rows.items():
            if row.is_mounted:
                row.set_note(ignored.get(key))
        for note in self.query(".ignored-note").results(Static):
            words = ignored.get(str(note.id).removeprefix("ignored-").replace("-", "."), "")
            if note.has_class("-empty") != (not words) or str(note.content) != words:
                note.update(words)
                note.set_class(not words, "-empty")

    @on(TabbedContent.TabActivated, "#sections")
    async def _section_shown(self, event: TabbedContent.TabActivated) -> None:
        await self._populate(str(event.pane.id).removeprefix("sec-"))

    async def action_section(self, delta: int) -> None:
        """Show the next (previous) section, with its first field focused (the old focus was in the
        section now hidden: nothing would have it)."""
        tabs = self.query_one("#sections", TabbedContent)
        names = [f"sec-{s}" for s in SECTIONS]
        target = names[(names.index(tabs.active) + delta) % len(names)]
        tabs.active = target
        await self._populate(target.removeprefix("sec-"))
        self.call_after_refresh(self.focus_first_field, target.removeprefix("sec-"))

    def focus_first_field(self, section: str) -> None:
        """Focus the first thing that takes focus in a section's form (its first field's control). Not when another
        section is shown by now (keys typed fast): focusing a field of a hidden section would show it again."""
        if self.query_one("#sections", TabbedContent).active != f"sec-{section}":
            return
        form = self.query_one(f"#form-{section}", VerticalScroll)
        first = next((w for w in form.query("*").results() if w.focusable and w is not form), None)
        if first is not None:
            first.focus()
            form.scroll_home(animate=False)

    def _row(self, field: FieldDef, label: str | None = None, show_help: bool = True) -> FieldRow:
        row = FieldRow(field, self.model.get(field.path), label, show_help)
        self.rows[field.key] = row
        return row

    def _section_rows(self, section: str) -> list[Any]:
        out: list[Any] = []
        model = self.model
        if section == "training":  # two dozen keys transformers documents: their help as tooltips, the form dense
            for key in TRAINING_FIELDS:
                out.append(self._row(training_field(key, model.training_specs), show_help=False))
            extra = model.extra_training_keys(TRAINING_FIELDS)
            out.append(Label("other TrainingArguments keys (TOML values)", classes="subtable", markup=False))
            for key in extra:
                out.append(self._row(FieldDef(("training", key), "literal")))
            out.append(Horizontal(Field(placeholder="key", id="new-key", compact=True),
                                  Field(placeholder="value (TOML)", id="new-value", compact=True),
                                  Button("Add", id="add-key", compact=True), id="add-row"))
            return out
        if section == "distributed":
            strategy: Any = SCHEMA["distributed"]["strategy"]
            out.append(self._row(field_for(("distributed", "strategy"), strategy), show_help=False))
            out.append(Vertical(*self._strategy_rows(), id="strategy-fields"))
            out.append(Vertical(*self._machines_rows(), id="machines"))
            return out
        for key, spec in SCHEMA[section].items():
            if isinstance(spec, KeySpec):
                if section == "hardware" and key == "gpus":
                    out.append(self._gpu_rows())
                    continue
                out.append(self._row(field_for((section, key), spec)))
        for key, spec in SCHEMA[section].items():
            if isinstance(spec, TableSpec):
                out += self._table_rows(section, key, spec)
        return out

    def _table_rows(self, section: str, key: str, spec: TableSpec) -> list[Any]:
        table = self.model.get((section, key))
        head = Words(f"[{section}.{key}]  {spec.doc}", classes="subtable")
        out: list[Any] = [head]
        if table is not None:
            out = [Horizontal(head, Button(plain(f"remove [{section}.{key}]"), id=f"remove-{section}-{key}", compact=True,
                                           tooltip="Remove this section from the profile (its defaults apply)"),
                              classes="table-head")]
        out.append(Words("", id=f"ignored-{section}-{key}", classes="ignored-note -empty"))
        if spec.keys:
            for sub, sub_spec in spec.keys.items():
                out.append(self._row(field_for((section, key, sub), sub_spec), f"{sub}"))
        elif isinstance(table, dict):
            for sub in table:
                out.append(self._row(FieldDef((section, key, sub), "literal"), sub))
        if not spec.keys and not isinstance(table, dict):
            out.append(Words("  (not set: add keys in the TOML file)", classes="hint"))
        return out

    def _strategy_rows(self) -> list[Any]:
        """The fields of the chosen strategy only, as `launch.strategies.STRATEGY_FIELDS` lists
        them: its [distributed] keys, then its settings table ([distributed.fsdp] for fsdp, …);
        rebuilt when the strategy changes. Keys the strategy does not use stay in the profile;
        those set to something other than their default are listed last, so they can be seen
        and emptied (a stale num_processes = 2 under "single" is an error the validator names)."""
        from tuitrain.launch.strategies import STRATEGY_HELP, fields_for

        strategy = self.model.strategy
        if strategy not in STRATEGY_HELP:
            return []
        fields = fields_for(strategy)
        section: dict[str, Any] = SCHEMA["distributed"]
        out: list[Any] = [Words(f"{strategy}: {STRATEGY_HELP[strategy]}", classes="hint")]
        own = [f.name for f in fields if f.section == "distributed"]
        tables = sorted({f.section.split(".")[1] for f in fields if f.section.count(".") == 1})
        for key in own:
            out.append(self._row(field_for(("distributed", key), section[key])))
        if not own and not tables:
            out.append(Words("nothing more to set here: precision and GPUs are in the Hardware tab", classes="hint"))
        for key in tables:
            out += self._table_rows("distributed", key, section[key])
        return out + self._leftover_rows(strategy, {"strategy", *own, *tables, *MACHINES_SECTION_KEYS})

    def _leftover_rows(self, strategy: str, used: set[str]) -> list[Any]:
        """[distributed] keys set away from their default and tables set, that `strategy` does not
        use: listed so they can be emptied or removed (they would be saved unseen otherwise)."""
        section: dict[str, Any] = SCHEMA["distributed"]
        keys, tables = self.model.unused_by_strategy(used)
        if not keys and not tables:
            return []
        out: list[Any] = [Words(f"set in this profile, not used by {strategy} (empty a field to remove it)",
                                classes="subtable")]
        out += [self._row(field_for(("distributed", key), section[key])) for key in keys]
        out += [Horizontal(Words(f"[distributed.{key}]: {len(self.model.get(('distributed', key)))} key(s)",
                                 classes="stale-table"),
                           Button(plain(f"remove [distributed.{key}]"), id=f"drop-{key}", compact=True), classes="stale-row")
                for key in tables]
        return out

    @on(Button.Pressed, ".stale-row Button")
    async def _drop_table(self, event: Button.Pressed) -> None:
        """Remove a strategy table the chosen strategy does not use (it would be saved otherwise)."""
        self.model.set(("distributed", str(event.button.id).removeprefix("drop-")), REMOVE)
        self._modified()
        await self._strategy_changed()

    @on(Button.Pressed, ".table-head Button")
    async def _remove_table(self, event: Button.Pressed) -> None:
        """Remove a whole sub-table ([model.config], [model.train_tokenizer], …)."""
        section, key = str(event.button.id).removeprefix("remove-").split("-", 1)
        self.model.set((section, key), REMOVE)
        self._modified()
        await self._rebuild(section)
        self.focus_first_field(section)

    # ------------------------------------------------------------------------------ starting points
    @on(Button.Pressed, "#start-model")
    def _start_from_model(self) -> None:
        from tuitrain.tui.screens.prompt import PromptScreen

        async def chosen(answer: str | None) -> None:
            if answer:
                self.model.start_from_model(answer)
                await self._started("model", f"model.name_or_path = {self.model.get(('model', 'name_or_path'))}")

        self.app.push_screen(PromptScreen(self.model.start_question("model")), chosen)

    @on(Button.Pressed, "#start-data")
    def _start_from_data(self) -> None:
        from tuitrain.tui.screens.prompt import PromptScreen

        def train_chosen(train: str | None) -> None:
            async def validation_chosen(validation: str | None) -> None:
                self.model.start_from_data(train or "", validation)
                await self._started("data", f"data.train_file = {self.model.get(('data', 'train_file'))}")

            if train:
                self.app.push_screen(PromptScreen("The validation file (empty: none):"), validation_chosen)

        self.app.push_screen(PromptScreen(self.model.start_question("data")), train_chosen)

    async def _started(self, section: str, what: str) -> None:
        self._modified()
        await self._rebuild("model", "data")
        self.query_one("#sections", TabbedContent).active = f"sec-{section}"
        await self._populate(section)
        self.notify(what, title="Starting point")

    def _forget_rows(self, box: Any) -> None:
        """The rows inside `box` are about to go: they leave `self.rows` too."""
        going = set(box.query(FieldRow).results())
        for key in [k for k, row in self.rows.items() if row in going]:
            del self.rows[key]

    async def _strategy_changed(self) -> None:
        box = self.query_one("#strategy-fields", Vertical)
        self._forget_rows(box)
        await box.remove_children()
        await box.mount_all(self._strategy_rows())
        self._plugin_rows_follow_the_json()
        self._apply_problems()

    # ------------------------------------------------------------------------------ machines
    def _machines_rows(self) -> list[Any]:
        """[[distributed.machines]]: a card a machine (the first is the main machine), each key of
        it a field; distributed.network_interface beside them; a button to add one."""
        from tuitrain.profile.schema import MACHINE_KEYS
        from tuitrain.profile.values import toml_literal

        section: dict[str, Any] = SCHEMA["distributed"]
        listed = self.model.machines
        out: list[Any] = [Words(f"[[distributed.machines]]  {section['machines'].doc}", classes="subtable")]
        if not listed:
            out.append(Words("none listed: the run is on this machine (a run started by hand on each machine "
                             "uses num_machines and machine_rank above); add a machine to start several over SSH",
                             classes="hint"))
        out.append(Words("", id="machines-error", classes="-empty"))
        out.append(self._row(field_for(("distributed", "network_interface"), section["network_interface"])))
        for index, item in enumerate(listed):
            if isinstance(item, dict):
                rows = [self._row(field_for(machine_path(index, key), spec), key, show_help=False)
                        for key, spec in MACHINE_KEYS.items()]
                out.append(MachineCard(index, len(listed), rows))
            else:
                out.append(MachineCard(index, len(listed), [], f"not a table ({toml_literal(item)}): remove it, "
                                       "or write it as a [[distributed.machines]] table with host = ..."))
        out.append(Button("+ add machine", id="add-machine", compact=True,
                          tooltip="Add a machine at the end (the first one is the main machine)"))
        return out

    async def _machines_changed(self, focus: tuple[int, str] | None = None) -> None:
        """Machines were added, removed or moved: the cards are rebuilt (their places are their
        ranks), and `focus` (machine index, a key or a button's class) gets the focus."""
        box = self.query_one("#machines", Vertical)
        self._forget_rows(box)
        await box.remove_children()
        await box.mount_all(self._machines_rows())
        self._apply_problems()
        if focus is None:
            return
        index, what = focus
        row = self.rows.get(".".join(machine_path(index, what)))
        cards = list(box.query(MachineCard).results())
        if row is not None:
            row.query_one(".field-control").focus()
        elif index < len(cards) and cards[index].query(f".{what}") and not cards[index].query_one(f".{what}").disabled:
            cards[index].query_one(f".{what}").focus()
        elif cards:
            cards[min(index, len(cards) - 1)].query_one(".machine-remove").focus()
        else:
            self.query_one("#add-machine").focus()

    def _focused_in_card(self) -> str:
        """What has the focus inside a machine card: a key of the machine, or a button's class."""
        focused = self.focused
        if isinstance(focused, Button):
            return next((c for c in ("machine-up", "machine-down", "machine-remove") if focused.has_class(c)), "host")
        row = next((a for a in (focused.ancestors if focused else []) if isinstance(a, FieldRow)), None)
        return row.field.path[-1] if row is not None else "host"

    @on(Button.Pressed, "#add-machine")
    async def _add_machine(self) -> None:
        refusal = self.model.add_machine()
        if refusal:
            self.notify(refusal, severity="warning")
            return
        self._modified()
        await self._machines_changed(focus=(len(self.model.machines) - 1, "host"))

    @on(MachineCard.Remove)
    async def _remove_machine(self, event: MachineCard.Remove) -> None:
        self.model.remove_machine(event.index)
        self._modified()
        await self._machines_changed(focus=(event.index, "machine-remove"))

    @on(MachineCard.Move)
    async def _move_machine(self, event: MachineCard.Move) -> None:
        where = self._focused_in_card()
        to = self.model.move_machine(event.index, event.delta)
        if to == event.index:
            return
        self._modified()
        await self._machines_changed(focus=(to, where))

    def _gpu_rows(self) -> Any:
        hardware = self.app.hardware
        gpus = tuple(getattr(hardware, "gpus", ()) or ())
        if not gpus:
            row = self._row(FieldDef(("hardware", "gpus"), "literal", doc="absent = all visible"))
            return Vertical(Words("  no NVIDIA GPU found: gpus picks physical GPUs on a machine that has them",
                                  classes="hint"), row, classes="gpu-box")
        ticked = self.model.ticked_gpus(gpus)
        items = [(prompt, g.index, g.index in ticked) for g, prompt in zip(gpus, self._gpu_prompts(gpus), strict=True)]
        return GpuPicker(items, self.model.gpu_mapping_lines(gpus))

    def _gpu_prompts(self, gpus: tuple[Any, ...]) -> list[str]:
        """Each GPU's line in the picker, a ticked one with the cuda:N it becomes (and a warning when taken)."""
        labels = cuda_labels(self.model.ticked_gpus(gpus)) if not self.model.on_cpu else {}
        view = getattr(self.app, "hardware_view", None)
        live = {g.index: g for g in view.snapshot.gpus} if view else {}
        return [f"{self._gpu_prompt(g)}{busy_note(live.get(g.index, g))}  {labels[g.index]}" if g.index in labels
                else self._gpu_prompt(g) for g in gpus]

    def _show_gpus(self) -> None:
        """The picker shows the GPUs' order (cuda:N labels, the mapping) and live figures as they are now."""
        gpus = tuple(getattr(self.app.hardware, "gpus", ()) or ())
        shown = (self._gpu_prompts(gpus), self.model.gpu_mapping_lines(gpus))
        if shown == self._gpus_shown:
            return  # (a picker built since was built from the same model and figures)
        self._gpus_shown = shown
        for picker in self.query(GpuPicker).results():
            picker.show(*shown)

    def _gpu_prompt(self, gpu: Any) -> str:
        """'GPU 1  NVIDIA RTX A6000  46.2/48.0 GiB in use, 97%': the live figures when sampled (memory as every
        view shows it, humanize.gpu_memory: LOST for a GPU that stopped answering)."""
        from tuitrain.hardware.na import NA
        from tuitrain.humanize import gpu_memory, size

        view = getattr(self.app, "hardware_view", None)
        live = next((g for g in view.snapshot.gpus if g.index == gpu.index), None) if view else None
        if live is not None and live.lost:
            return f"GPU {gpu.index}  {gpu.name}  LOST"
        if live is None or live.memory_used is NA:
            return f"GPU {gpu.index}  {gpu.name}  {size(gpu.memory_total)}"
        busy = f", {live.utilization}%" if live.utilization is not NA else ""
        return f"GPU {gpu.index}  {gpu.name}  {gpu_memory(live.memory_used, live.memory_total)} in use{busy}"

    def hardware_sampled(self, _line: str) -> None:
        """Keep the GPU checklist's memory figures live."""
        self._show_gpus()

    # ------------------------------------------------------------------------------ editing
    @on(FieldRow.Changed)
    async def _field_changed(self, event: FieldRow.Changed) -> None:
        self.model.set(event.row.field.path, event.value)
        self._modified()
        if event.row.field.path == ("distributed", "strategy"):
            await self._strategy_changed()
        elif event.row.field.path == ("distributed", "deepspeed", "config_file"):
            self._plugin_rows_follow_the_json()

    def _plugin_rows_follow_the_json(self) -> None:
        """A DeepSpeed JSON replaces the plugin fields (accelerate refuses both): while one is
        named, those rows are disabled; a value already in one keeps its error beside it."""
        from tuitrain.profile.schema import DEEPSPEED_PLUGIN_KEYS

        disabled = self.model.disabled_plugin_keys()
        for key in DEEPSPEED_PLUGIN_KEYS:
            row = self.rows.get(f"distributed.deepspeed.{key}")
            if row is not None:
                row.disabled = key in disabled

    @on(SelectionList.SelectedChanged, "#gpu-list")
    def _gpus_ticked(self, event: SelectionList.SelectedChanged) -> None:
        """A tick goes last in cuda:N order, an untick takes out that GPU only (the order is the profile's)."""
        gpus = tuple(getattr(self.app.hardware, "gpus", ()) or ())
        self.model.tick_gpus(list(event.selection_list.selected), gpus)
        if self.model.dirty:
            self._modified()

    @on(GpuList.Move)
    def _gpu_moved(self, event: GpuList.Move) -> None:
        gpus = tuple(getattr(self.app.hardware, "gpus", ()) or ())
        if self.model.move_gpu(event.physical, event.delta, gpus):
            self._modified()
        else:
            self.notify("tick the GPU first" if event.physical not in self.model.ticked_gpus(gpus)
                        else "it is already at that end", severity="warning", timeout=3)

    def _modified(self) -> None:
        """The model has changed: the title says so, and once the changes pause (`check_delay` after the last one)
        the notes beside the fields follow and the profile is checked again."""
        title, shown = self._title(), self.query_one("#title", Static)
        if str(shown.content) != str(title):  # an update lays out the whole form again: only when its words change
            shown.update(title)
        self._show_gpus()
        self._recheck_soon()

    def _recheck_soon(self) -> None:
        """One check once typing pauses, not a check (a validation, a plan, a port probe) a key."""
        if self._check_timer is not None:
            self._check_timer.stop()
        self._check_timer = self.set_timer(self.check_delay, self.revalidate)

    @on(Button.Pressed, "#add-key")
    @on(Input.Submitted, "#new-value")
    async def add_key(self) -> None:
        key_box, value_box = self.query_one("#new-key", Input), self.query_one("#new-value", Input)
        key = key_box.value.strip()
        if key and f"training.{key}" in self.rows:
            self.notify(f"training.{key} is already in the form", severity="warning")
            return
        refusal = self.model.add_training_key(key, parse_value("literal", value_box.value))
        if refusal:
            self.notify(refusal, severity="warning")
            return
        row = self._row(FieldDef(("training", key), "literal"))
        await self.query_one("#form-training", VerticalScroll).mount(row, before=self.query_one("#add-row"))
        key_box.value = value_box.value = ""
        self._modified()

    # ------------------------------------------------------------------------------ checking
    def revalidate(self) -> None:
        """Check the form and plan it again now, in a worker, on a copy taken now. The worker is
        exclusive (a newer one cancels it) and each check is numbered, so a result that arrives
        after a later edit is dropped: only the latest check is shown, and none writes to a field."""
        if self._check_timer is not None:
            self._check_timer.stop()
            self._check_timer = None
        self._show_ignored(if_changed=True)  # here, not on each edit: a note that comes or goes lays out the form
        self._check(*self.model.begin_check())

    @work(thread=True, exclusive=True, group="editor-check", exit_on_error=False)
    def _check(self, data: dict[str, Any], number: int) -> None:
        from textual.worker import get_current_worker

        check = self.model.check(data, number, self.app.runs_root, self.app.hardware)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._checked, check, plan_text(check))

    def _checked(self, check: Check, plan: "Text | WithCommands") -> None:
        if not self.model.take_check(check):
            return  # a later edit's check is on its way
        self._apply_problems()
        problems = check.problems
        errors = sum(1 for p in problems if p.is_error)
        summary = Text()
        if errors:
            summary.append(f"{errors} error(s)\n", style="bold red")
            summary.append(problem_lines(f"• {p.key or 'profile'}: {p.message}" for p in problems if p.is_error) + "\n\n",
                           style="red")
        else:
            summary.append("no errors\n\n", style="green")
        others = [p for p in problems if not p.is_error]
        if others:
            summary.append(problem_lines(f"{p.severity}: {p.key or 'profile'}: {p.message}" for p in others) + "\n\n",
                           style="yellow")
        self.query_one("#problems", Static).update(summary)
        self.query_one("#plan", Static).update(plan)

    def _apply_problems(self) -> None:
        """Each problem beside its field (or the nearest parent field), in the validator's words;
        one about a whole machine on its card, one about the machines together above them."""
        from textual.css.query import NoMatches

        cards = {f"distributed.machines[{card.index}]": card for card in self.query(MachineCard).results()}
        by_row = self.model.problems_by_field({*self.rows, *cards, "distributed.machines"})
        for key, row in self.rows.items():
            if row.is_mounted:
                row.set_error(problem_lines(by_row.get(key, [])) or None)
        for key, card in cards.items():
            if card.is_mounted:
                card.set_error(problem_lines(by_row.get(key, [])) or None)
        try:
            above = self.query_one("#machines-error", Static)
        except NoMatches:
            return
        words = problem_lines(by_row.get("distributed.machines", []))
        above.update(words)
        above.set_class(not words, "-empty")

    # ------------------------------------------------------------------------------ saving
    def action_save(self) -> None:
        if not self.loaded:
            return
        if self.path is None:
            self.action_save_as()
            return
        self._save(self.path)

    def action_save_as(self) -> None:
        from tuitrain.tui.screens.prompt import PromptScreen

        if not self.loaded:
            return
        model = self.model

        def chosen(answer: str | None) -> None:
            target = model.save_as_target(answer)
            if target is not None:
                self._save(target, new_path=True)

        self.app.push_screen(PromptScreen(SAVE_AS_QUESTION, model.save_as_default(), model.save_as_outcome), chosen)

    def _save(self, target: Path, new_path: bool = False) -> None:
        """Save a copy taken now, and check that same copy as the saved file: the toast and the
        error pane then say the same thing (one check, not a stale one beside a newer one)."""
        if self._check_timer is not None:
            self._check_timer.stop()
            self._check_timer = None
        data, number = self.model.begin_check()
        changes = self.model.save_as_changes(target) if new_path else []
        self.save_to(target, new_path, with_changes(data, changes), number, changes)

    @work(thread=True, exclusive=True, group="editor-save", exit_on_error=False)
    def save_to(self, target: Path, new_path: bool, data: dict[str, Any], number: int, changes: list[Any]) -> None:
        from tuitrain.profile import ProfileError

        try:
            warnings = self.model.save(target, new_path, data)
        except (ProfileError, OSError) as exc:
            self.notify(str(exc), title="Not saved", severity="error", timeout=10)
            self.app.call_from_thread(self.revalidate)
            return
        check = self.model.check(data, number, self.app.runs_root, self.app.hardware, path=target)
        self.app.call_from_thread(self._saved, target, warnings, data, check, plan_text(check),  # type: ignore[arg-type]
                                  changes)

    async def _saved(self, target: Path, warnings: list[str], data: dict[str, Any], check: Check,
                     plan: "Text | WithCommands",
                     changes: list[Any]) -> None:
        note = self.model.saved(target, data, check, changes)
        await self._rebuild(*{key[0] for key, _old, _new in changes})  # the fields show what the file says
        self.query_one("#title", Static).update(self._title())
        notice = self.model.notice  # "new profile …" and the like are true no longer
        self.query_one("#notice", Static).update(Text(notice))
        self.query_one("#notice", Static).display = bool(notice)
        self.query_one("#start-bar").display = self.model.brand_new
        self._checked(check, plan)
        errors = any(p.is_error for p in check.problems)
        self.notify(note, title="Saved", severity="warning" if errors else "information")
        for title, words in change_notes(changes):
            self.notify(words, title=title, timeout=12)
        for warning in warnings:
            self.notify(warning, title="Comments", severity="warning", timeout=12)

    # ------------------------------------------------------------------------------ launching
    def action_launch(self) -> None:
        """Launch the form as it is now: checked again first (a check may be pending), then started."""
        if not self.loaded:
            return
        if self._check_timer is not None:
            self._check_timer.stop()
            self._check_timer = None
        self.launch(*self.model.begin_check())

    @work(thread=True, exclusive=True, group="editor-launch", exit_on_error=False)
    def launch(self, data: dict[str, Any], number: int) -> None:
        from tuitrain.errors import TuitrainError, error_lines
        from tuitrain.tui.messages import RunStarted

        check = self.model.check(data, number, self.app.runs_root, self.app.hardware)
        self.app.call_from_thread(self._checked, check, plan_text(check))
        refusal = self.model.launch_refusal(check)
        if refusal:
            self.notify(refusal, title="Not launched", severity="error", timeout=10)
            return
        try:
            started = self.model.launch(self.app.runs_root, self.app.launch_overrides, self.app.hardware, data)
        except (TuitrainError, OSError) as exc:  # the machines' checks, when they failed, a line each
            self.notify("\n".join(error_lines(exc)), title="Not launched", severity="error", timeout=10, markup=False)
            return
        self.app.post_message(RunStarted(str(started.paths.root), started.note))

    def action_copy_command(self) -> None:
        """Copy `tuitrain run PROFILE [--set …]`: it runs as is from the working folder."""
        if not self.loaded:
            return
        command, note = self.model.run_command(self.app.runs_root, self.app.launch_overrides)
        if not command:
            self.notify(note, severity="warning")
            return
        self.app.copy_to_clipboard(command)
        self.notify(note, severity="warning" if self.errors else "information")

    def action_copy_accelerate(self) -> None:
        if not self.command:
            self.notify("no command yet: fix the errors first", severity="warning")
            return
        self.app.copy_to_clipboard(self.command)
        self.notify(self.model.copy_command_note(), severity="warning" if self.errors else "information")

    def action_export_accelerate(self) -> None:
        """The form's accelerate config, written to a file the user names (atomically, in a worker)."""
        from tuitrain.tui.screens.prompt import PromptScreen

        refusal = self.model.accelerate_refusal() if self.loaded else "the profile is still loading"
        if refusal:
            self.notify(refusal, title="Accelerate config not written", severity="warning")
            return

        def outcome(answer: str) -> str:
            target = self.model.accelerate_target(answer)
            return f"{'replaces' if target.exists() else 'writes'} {target}" if answer.strip() else ""

        def chosen(answer: str | None) -> None:
            if answer:
                self.write_accelerate(self.model.accelerate_target(answer), copy.deepcopy(self.model.data))

        self.app.push_screen(PromptScreen("Write the accelerate config to (a YAML file):",
                                          f"accelerate-{self.model.own_name}.yaml", outcome), chosen)

    @work(thread=True, group="accelerate-export", exit_on_error=False)
    def write_accelerate(self, target: Path, data: dict[str, Any]) -> None:
        from tuitrain.atomic import write_text_atomic

        try:
            write_text_atomic(target, self.model.accelerate_yaml(data))
        except OSError as exc:
            self.notify(f"{target}: {exc.strerror or exc}", title="Accelerate config not written", severity="error")
            return
        self.notify(f"{target}: use it with accelerate launch --config_file", title="Accelerate config written")

    def action_back(self) -> None:
        from tuitrain.tui.screens.confirm import ConfirmScreen

        if not self.dirty:
            self.app.pop_screen()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.pop_screen()

        self.app.push_screen(ConfirmScreen("Leave the editor? Unsaved changes are lost.", yes="Leave"), answered)
