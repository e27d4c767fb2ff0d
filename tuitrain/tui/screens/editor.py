"""Profile editor: a form a section, the right widget a key, the validator's words beside each
field, and a live preview of what would run (command line, environment, accelerate YAML).

The screen edits a plain dict (the profile as written: no defaults filled in); every change is
validated and planned in a worker by the profile and launch layers. Saving goes through
`save_profile` (atomic; a file with comments is backed up first and the app says so).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Input, Label, Static, TabbedContent, TabPane

from tuitrain.profile.schema import SCHEMA, KeySpec, TableSpec
from tuitrain.tui.widgets.key_bar import KeyBar
from tuitrain.tui.widgets.field_row import REMOVE, FieldDef, FieldRow, parse_value

SECTIONS = ("run", "model", "data", "training", "metrics", "hardware", "distributed", "logging")
# [training] keys shown as fields (their kinds and choices come from the installed TrainingArguments);
# any other key of the file's [training] is a raw key/value row.
TRAINING_FIELDS = (
    "max_steps", "num_train_epochs", "per_device_train_batch_size", "per_device_eval_batch_size",
    "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type", "warmup_steps", "weight_decay",
    "optim", "max_grad_norm", "logging_steps", "eval_strategy", "eval_steps", "save_strategy", "save_steps",
    "save_total_limit", "load_best_model_at_end", "metric_for_best_model", "greater_is_better",
    "gradient_checkpointing", "report_to", "dataloader_num_workers",
)
FALLBACK_CHOICES = {
    "eval_strategy": ("no", "steps", "epoch"),
    "save_strategy": ("no", "steps", "epoch", "best"),
    "lr_scheduler_type": ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
                          "constant_with_warmup", "inverse_sqrt", "reduce_lr_on_plateau"),
    "optim": ("adamw_torch", "adamw_torch_fused", "adafactor", "sgd", "adagrad"),
}


def field_for(path: tuple[str, ...], spec: KeySpec) -> FieldDef:
    if spec.choices and spec.kind in ("str", "int"):
        kind = "choice"
    elif spec.kind == "bool":
        kind = "bool"
    elif spec.kind in ("int", "float", "str"):
        kind = spec.kind
    else:
        kind = "literal"
    return FieldDef(path, kind, spec.choices, spec.default, spec.doc or (spec.example or ""))


def training_field(key: str, specs: dict[str, Any] | None) -> FieldDef:
    spec = (specs or {}).get(key)
    if spec is None:
        choices = FALLBACK_CHOICES.get(key)
        return FieldDef(("training", key), "choice" if choices else "literal", choices)
    base = spec.base_type
    if spec.choices and base == "str":
        kind = "choice"
    elif base == "bool":
        kind = "bool"
    elif base in ("int", "float", "str"):
        kind = base
    else:
        kind = "literal"
    return FieldDef(("training", key), kind, tuple(spec.choices) if spec.choices else None, spec.default,
                    (spec.help or "").split(". ")[0][:200])


def get_path(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set (or, with REMOVE, drop) a key; tables a removal leaves empty are dropped too."""
    if value is REMOVE:
        trail = [data]
        for part in path[:-1]:
            child = trail[-1].get(part)
            if not isinstance(child, dict):
                return
            trail.append(child)
        trail[-1].pop(path[-1], None)
        for depth in range(len(path) - 1, 0, -1):
            if trail[depth] == {}:
                trail[depth - 1].pop(path[depth - 1], None)
        return
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value


class EditorScreen(Screen):
    CSS_PATH = "editor.tcss"
    HELP_TITLE = "Profile editor"
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", tooltip="Save the profile (atomically; a backup keeps any comments)"),
        Binding("ctrl+o", "save_as", "Save as", tooltip="Save the profile under another name"),
        Binding("ctrl+r", "launch", "Launch", tooltip="Launch this profile as it is in the form"),
        Binding("ctrl+y", "copy_command", "Copy command", tooltip="Copy the accelerate command line"),
        Binding("escape", "back", "Back", tooltip="Back to the home screen (asks when there are unsaved changes)"),
        Binding("ctrl+pagedown", "section(1)", "Next section", show=False, tooltip="Next section (ctrl+pagedown)"),
        Binding("ctrl+pageup", "section(-1)", "Previous section", show=False, tooltip="Previous section (ctrl+pageup)"),
    ]

    def __init__(self, path: Path | None, accelerate_config: Path | None = None) -> None:
        """`accelerate_config`: a new profile whose [distributed] and [hardware] come from that
        accelerate config file (the rest from the built-in demo)."""
        from tuitrain.profile.load import BUILTIN_DIR

        super().__init__()
        self.path = Path(path) if path else None
        self.accelerate_config = Path(accelerate_config) if accelerate_config else None
        self.imported_notes: list[str] = []
        self._checks = 0
        self.template: Path | None = None
        if self.path is not None and self.path.resolve().parent == BUILTIN_DIR.resolve():
            self.template, self.path = self.path, None  # built-in profiles are templates: saving asks for a file
        self.data: dict[str, Any] = {}
        self.rows: dict[str, FieldRow] = {}
        self.problems: list[Any] = []
        self.dirty = False
        self.command = ""
        self.has_comments = False
        self.training_specs: dict[str, Any] | None = None
        self.loaded = False
        self.populated: set[str] = set()

    # ------------------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(self._title(), classes="title-bar", id="title")
        yield Static("", id="notice", classes="hint")
        with Horizontal(id="editor-body"):
            with TabbedContent(id="sections"):
                for section in SECTIONS:
                    with TabPane(section.capitalize(), id=f"sec-{section}"):
                        yield VerticalScroll(id=f"form-{section}")
            with VerticalScroll(id="preview"):
                yield Static("", id="problems")
                yield Static("", id="plan")
        yield KeyBar()

    def _title(self) -> str:
        where = self.app.show_path(self.path) if self.path else "new profile (not saved yet)"
        return f"profile editor · {where}" + (" · modified" if self.dirty else "")

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="editor-load", exit_on_error=False)
    def load(self) -> None:
        from tuitrain.profile import ProfileError, training_args_fields
        from tuitrain.profile.load import BUILTIN_DIR, parse_toml, read_profile_text
        from tuitrain.profile.save import has_comments

        specs = training_args_fields()
        source = self.path or self.template or BUILTIN_DIR / "demo.toml"
        try:
            text = read_profile_text(source, str(source))
            data = parse_toml(text, str(source))
        except ProfileError as exc:
            self.app.call_from_thread(self._cannot_load, str(exc))
            return
        if self.path is None and self.template is None:
            data.setdefault("run", {})["name"] = "my-profile"
        if self.accelerate_config is not None:
            from tuitrain.profile.accelerate_import import import_accelerate_file

            try:
                result = import_accelerate_file(self.accelerate_config)
            except (OSError, ValueError) as exc:
                self.app.call_from_thread(self._cannot_load, f"{self.accelerate_config}: cannot read it: {exc}")
                return
            self.imported_notes = [str(p) for p in result.problems]
            if not result.errors:
                data = result.merge_into(data)
            data.setdefault("run", {})["name"] = "from-accelerate"
        self.app.call_from_thread(self._loaded, data, specs, has_comments(text) and self.path is not None)

    def _cannot_load(self, why: str) -> None:
        self.query_one("#notice", Static).update(Text(f"cannot edit in the form: {why}", style="red"))

    async def _loaded(self, data: dict[str, Any], specs: dict[str, Any] | None, comments: bool) -> None:
        self.data = data
        self.training_specs = specs
        self.has_comments = comments
        notice = ""
        if self.path is None:
            notice = (f"a copy of the built-in {self.template.stem} profile: ctrl+s saves it as a new file"
                      if self.template else "new profile, starting from the built-in demo: ctrl+s saves it as a new file")
        if self.accelerate_config is not None:
            notice = (f"[distributed] and [hardware] imported from {self.accelerate_config}; the rest from the built-in "
                      "demo: ctrl+s saves it as a new file")
            if self.imported_notes:
                notice += "\n" + "\n".join(self.imported_notes)
        if comments:
            notice = "this file has comments: saving cannot keep them, so the old file is kept as a .bak backup"
        self.query_one("#notice", Static).update(Text(notice))  # plain text: "[distributed]" is no markup
        self.query_one("#notice", Static).display = bool(notice)
        self.loaded = True
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

    @on(TabbedContent.TabActivated, "#sections")
    async def _section_shown(self, event: TabbedContent.TabActivated) -> None:
        await self._populate(str(event.pane.id).removeprefix("sec-"))

    def action_section(self, delta: int) -> None:
        tabs = self.query_one("#sections", TabbedContent)
        names = [f"sec-{s}" for s in SECTIONS]
        tabs.active = names[(names.index(tabs.active) + delta) % len(names)]

    def _row(self, field: FieldDef, label: str | None = None, show_help: bool = True) -> FieldRow:
        row = FieldRow(field, get_path(self.data, field.path), label, show_help)
        self.rows[field.key] = row
        return row

    def _section_rows(self, section: str) -> list[Any]:
        out: list[Any] = []
        if section == "training":  # two dozen keys transformers documents: their help as tooltips, the form dense
            for key in TRAINING_FIELDS:
                out.append(self._row(training_field(key, self.training_specs), show_help=False))
            extra = [k for k in (self.data.get("training") or {}) if k not in TRAINING_FIELDS]
            out.append(Label("other TrainingArguments keys (TOML values)", classes="subtable"))
            for key in extra:
                out.append(self._row(FieldDef(("training", key), "literal")))
            out.append(Horizontal(Input(placeholder="key", id="new-key", compact=True),
                                  Input(placeholder="value (TOML)", id="new-value", compact=True),
                                  Button("Add", id="add-key", compact=True), id="add-row"))
            return out
        if section == "distributed":
            strategy: Any = SCHEMA["distributed"]["strategy"]
            out.append(self._row(field_for(("distributed", "strategy"), strategy), show_help=False))
            out.append(Vertical(*self._strategy_rows(), id="strategy-fields"))
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
        table = get_path(self.data, (section, key))
        out: list[Any] = [Static(f"[{section}.{key}]  {spec.doc}", classes="subtable", markup=False)]
        if spec.keys:
            for sub, sub_spec in spec.keys.items():
                out.append(self._row(field_for((section, key, sub), sub_spec), f"{sub}"))
        elif isinstance(table, dict):
            for sub in table:
                out.append(self._row(FieldDef((section, key, sub), "literal"), sub))
        if not spec.keys and not isinstance(table, dict):
            out.append(Static("  (not set: add keys in the TOML file)", classes="hint"))
        return out

    def _strategy_rows(self) -> list[Any]:
        """The fields of the chosen strategy only, as `launch.strategies.STRATEGY_FIELDS` lists
        them: its [distributed] keys, then its settings table ([distributed.fsdp] for fsdp, …);
        rebuilt when the strategy changes. Keys the strategy does not use stay in the profile;
        those set to something other than their default are listed last, so they can be seen
        and emptied (a stale num_processes = 2 under "single" is an error the validator names)."""
        from tuitrain.launch.strategies import STRATEGY_HELP, fields_for

        strategy = get_path(self.data, ("distributed", "strategy")) or "single"
        if strategy not in STRATEGY_HELP:
            return []
        fields = fields_for(strategy)
        section: dict[str, Any] = SCHEMA["distributed"]
        out: list[Any] = [Static(f"{strategy}: {STRATEGY_HELP[strategy]}", classes="hint")]
        plain = [f.name for f in fields if f.section == "distributed"]
        tables = sorted({f.section.split(".")[1] for f in fields if f.section.count(".") == 1})
        for key in plain:
            out.append(self._row(field_for(("distributed", key), section[key])))
        if not plain and not tables:
            out.append(Static("nothing more to set here: precision and GPUs are in the Hardware tab", classes="hint"))
        for key in tables:
            out += self._table_rows("distributed", key, section[key])
        return out + self._leftover_rows(strategy, {"strategy", *plain, *tables})

    def _leftover_rows(self, strategy: str, used: set[str]) -> list[Any]:
        """[distributed] keys set away from their default and tables set, that `strategy` does not
        use: listed so they can be emptied or removed (they would be saved unseen otherwise)."""
        section: dict[str, Any] = SCHEMA["distributed"]
        keys = [key for key, spec in section.items() if key not in used and isinstance(spec, KeySpec)
                and get_path(self.data, ("distributed", key)) not in (None, spec.default)]
        tables = [key for key, spec in section.items() if key not in used and isinstance(spec, TableSpec)
                  and get_path(self.data, ("distributed", key))]
        if not keys and not tables:
            return []
        out: list[Any] = [Static(f"set in this profile, not used by {strategy} (empty a field to remove it)",
                                 classes="subtable")]
        out += [self._row(field_for(("distributed", key), section[key])) for key in keys]
        out += [Horizontal(Static(f"[distributed.{key}]: {len(get_path(self.data, ('distributed', key)))} key(s)",
                                  classes="stale-table", markup=False),
                           Button(f"remove [distributed.{key}]", id=f"drop-{key}", compact=True), classes="stale-row")
                for key in tables]
        return out

    @on(Button.Pressed, ".stale-row Button")
    async def _drop_table(self, event: Button.Pressed) -> None:
        """Remove a strategy table the chosen strategy does not use (it would be saved otherwise)."""
        set_path(self.data, ("distributed", str(event.button.id).removeprefix("drop-")), REMOVE)
        self._modified()
        await self._strategy_changed()

    async def _strategy_changed(self) -> None:
        box = self.query_one("#strategy-fields", Vertical)
        for key in [k for k in self.rows if k.startswith("distributed.") and k != "distributed.strategy"]:
            del self.rows[key]
        await box.remove_children()
        await box.mount_all(self._strategy_rows())
        self._plugin_rows_follow_the_json()
        self._apply_problems()

    def _gpu_rows(self) -> Any:
        hardware = self.app.hardware
        gpus = tuple(getattr(hardware, "gpus", ()) or ())
        if not gpus:
            row = self._row(FieldDef(("hardware", "gpus"), "literal", doc="absent = all visible"))
            return Vertical(Static("  no NVIDIA GPU found: gpus picks physical GPUs on a machine that has them",
                                   classes="hint"), row, classes="gpu-box")
        from textual.widgets import SelectionList

        chosen = get_path(self.data, ("hardware", "gpus")) or []
        items = [(self._gpu_prompt(g), g.index, g.index in chosen) for g in gpus]
        return Vertical(Label("gpus (none ticked = all visible)"), SelectionList(*items, id="gpu-list"),
                        classes="gpu-box")

    def _gpu_prompt(self, gpu: Any) -> str:
        """'GPU 1  NVIDIA RTX A6000  46.2/48.0 GiB in use, 97%': the live figures when sampled."""
        from tuitrain.hardware.na import NA
        from tuitrain.humanize import size

        view = getattr(self.app, "hardware_view", None)
        live = next((g for g in view.snapshot.gpus if g.index == gpu.index), None) if view else None
        if live is None or live.memory_used is NA:
            return f"GPU {gpu.index}  {gpu.name}  {size(gpu.memory_total)}"
        busy = f", {live.utilization}%" if live.utilization is not NA else ""
        return f"GPU {gpu.index}  {gpu.name}  {size(live.memory_used)}/{size(live.memory_total)} in use{busy}"

    def hardware_sampled(self, _line: str) -> None:
        """Keep the GPU checklist's memory figures live."""
        from textual.css.query import NoMatches
        from textual.widgets import SelectionList

        try:
            gpu_list = self.query_one("#gpu-list", SelectionList)
        except NoMatches:
            return
        gpus = tuple(getattr(self.app.hardware, "gpus", ()) or ())
        for position, gpu in enumerate(gpus[:gpu_list.option_count]):
            gpu_list.replace_option_prompt_at_index(position, self._gpu_prompt(gpu))

    # ------------------------------------------------------------------------------ editing
    @on(FieldRow.Changed)
    async def _field_changed(self, event: FieldRow.Changed) -> None:
        set_path(self.data, event.row.field.path, event.value)
        self._modified()
        if event.row.field.path == ("distributed", "strategy"):
            await self._strategy_changed()
        elif event.row.field.path == ("distributed", "deepspeed", "config_file"):
            self._plugin_rows_follow_the_json()

    def _plugin_rows_follow_the_json(self) -> None:
        """A DeepSpeed JSON replaces the plugin fields (accelerate refuses both): while one is
        named, those rows are disabled; a value already in one keeps its error beside it."""
        from tuitrain.profile.schema import DEEPSPEED_PLUGIN_KEYS

        has_json = bool(get_path(self.data, ("distributed", "deepspeed", "config_file")))
        for key in DEEPSPEED_PLUGIN_KEYS:
            row = self.rows.get(f"distributed.deepspeed.{key}")
            if row is not None:
                row.disabled = has_json and get_path(self.data, ("distributed", "deepspeed", key)) is None

    def on_selection_list_selected_changed(self, event: Any) -> None:
        selected = sorted(event.selection_list.selected)
        set_path(self.data, ("hardware", "gpus"), selected if selected else REMOVE)
        self._modified()

    def _modified(self) -> None:
        self.dirty = True
        self.query_one("#title", Static).update(self._title())
        self.revalidate()

    @on(Button.Pressed, "#add-key")
    @on(Input.Submitted, "#new-value")
    async def add_key(self) -> None:
        key_box, value_box = self.query_one("#new-key", Input), self.query_one("#new-value", Input)
        key = key_box.value.strip()
        if not key:
            self.notify("give the key's name first", severity="warning")
            return
        if f"training.{key}" in self.rows:
            self.notify(f"training.{key} is already in the form", severity="warning")
            return
        value = parse_value("literal", value_box.value)
        if value is REMOVE:
            self.notify("give a value (a TOML value: 10, 0.5, true, \"text\", [1, 2])", severity="warning")
            return
        set_path(self.data, ("training", key), value)
        row = self._row(FieldDef(("training", key), "literal"))
        await self.query_one("#form-training", VerticalScroll).mount(row, before=self.query_one("#add-row"))
        key_box.value = value_box.value = ""
        self._modified()

    # ------------------------------------------------------------------------------ checking
    def revalidate(self) -> None:
        """Check the form and plan it again, in a worker, on a copy taken now. Thread workers are
        not stopped by a newer one, so each check is numbered and only the latest one is shown."""
        self._checks += 1
        self._check(copy.deepcopy(self.data), self._checks)

    @work(thread=True, group="editor-check", exit_on_error=False)
    def _check(self, data: dict[str, Any], number: int) -> None:
        from tuitrain.profile import Profile, validate_profile
        from tuitrain.runs.relaunch import plan_profile
        from tuitrain.yaml_text import dump as dump_yaml

        label = str(self.path) if self.path else "<new profile>"
        problems = validate_profile(data, label, self.planned_path.resolve().parent)
        plan_text: Text
        command = ""
        if any(p.is_error for p in problems):
            plan_text = Text("fix the errors to see what would run", style="dim")
        else:
            try:
                plan = plan_profile(Profile(path=self.planned_path, data=data),
                                    self.app.runs_root / "<new-run>", self.app.hardware)
            except Exception as exc:  # noqa: BLE001 - a half-typed profile the planner cannot read: say why
                plan_text = Text(f"cannot plan yet: {type(exc).__name__}: {exc}", style="red")
            else:
                command = plan.command_line()
                plan_text = Text()
                plan_text.append("command (ctrl+y copies)\n", style="bold")
                plan_text.append(command + "\n\n")
                plan_text.append("environment\n", style="bold")
                plan_text.append("\n".join(f"{k}={v}" for k, v in sorted(plan.env.items())) + "\n\n")
                plan_text.append("accelerate.yaml\n", style="bold")
                plan_text.append(dump_yaml(plan.accelerate_config))
                for problem in plan.problems:
                    problems.append(problem)
                if plan.notes:
                    plan_text.append("\nnotes\n", style="bold")
                    plan_text.append("\n".join(plan.notes), style="dim")
        self.app.call_from_thread(self._checked, problems, plan_text, command, number)

    def _checked(self, problems: list[Any], plan_text: Text, command: str, number: int) -> None:
        if number != self._checks:
            return  # a later edit's check is on its way
        self.problems = problems
        self.command = command
        self._apply_problems()
        errors = sum(1 for p in problems if p.is_error)
        summary = Text()
        if errors:
            summary.append(f"{errors} error(s)\n", style="bold red")
            summary.append("\n".join(f"• {p.key or 'profile'}: {p.message}" for p in problems if p.is_error) + "\n\n",
                           style="red")
        else:
            summary.append("no errors\n\n", style="green")
        others = [p for p in problems if not p.is_error]
        if others:
            summary.append("\n".join(f"{p.severity}: {p.key or 'profile'}: {p.message}" for p in others) + "\n\n",
                           style="yellow")
        self.query_one("#problems", Static).update(summary)
        self.query_one("#plan", Static).update(plan_text)

    def _apply_problems(self) -> None:
        """Each problem beside its field (or the nearest parent field), in the validator's words."""
        problems = self.problems
        by_row: dict[str, list[str]] = {}
        for p in problems:
            key = p.key
            while key and key not in self.rows:
                key = key.rsplit(".", 1)[0] if "." in key else ""
            words = p.message + (f"; {p.fix}" if p.fix else "")
            if p.severity != "error":
                words = f"{p.severity}: {words}"
            if key:
                by_row.setdefault(key, []).append(words)
        for key, row in self.rows.items():
            if row.is_mounted:
                row.set_error("\n".join(by_row.get(key, [])) or None)

    @property
    def planned_path(self) -> Path:
        """The file the profile is checked and planned as: an unsaved one as ./profiles/new.toml
        (where saving puts it), so its relative paths mean what they will mean once saved."""
        return self.path or self.app.cwd / "profiles" / "new.toml"

    @property
    def errors(self) -> list[Any]:
        return [p for p in self.problems if p.is_error]

    # ------------------------------------------------------------------------------ saving
    def action_save(self) -> None:
        if not self.loaded:
            return
        if self.path is None:
            self.action_save_as()
            return
        self.save_to(self.path)

    def action_save_as(self) -> None:
        from tuitrain.tui.screens.prompt import PromptScreen

        if not self.loaded:
            return
        name = (self.data.get("run") or {}).get("name") or "profile"
        default = str(self.path) if self.path else str(Path("profiles") / f"{name}.toml")

        def chosen(answer: str | None) -> None:
            if answer:
                target = Path(answer).expanduser()
                if not target.is_absolute():
                    target = self.app.cwd / target
                if target.suffix != ".toml":
                    target = target.with_suffix(".toml")
                self.save_to(target, new_path=True)

        self.app.push_screen(PromptScreen("Save the profile as (a .toml path; relative to the working folder):",
                                          default), chosen)

    @work(thread=True, exclusive=True, group="editor-save", exit_on_error=False)
    def save_to(self, target: Path, new_path: bool = False) -> None:
        from tuitrain.profile import ProfileError, save_profile

        try:
            if new_path:
                target.parent.mkdir(parents=True, exist_ok=True)
            warnings = save_profile(copy.deepcopy(self.data), target)
        except (ProfileError, OSError) as exc:
            self.app.call_from_thread(self.notify, str(exc), title="Not saved", severity="error", timeout=10)
            return
        self.app.call_from_thread(self._saved, target, [str(w) for w in warnings])

    def _saved(self, target: Path, warnings: list[str]) -> None:
        self.path = target
        self.dirty = False
        self.query_one("#title", Static).update(self._title())
        errors = len(self.errors)
        note = f"saved {target}" + (f" ({errors} error(s) left: it will not launch until fixed)" if errors else "")
        self.notify(note, title="Saved", severity="warning" if errors else "information")
        for warning in warnings:
            self.notify(warning, title="Comments", severity="warning", timeout=12)
        self.revalidate()

    # ------------------------------------------------------------------------------ launching
    def action_launch(self) -> None:
        if not self.loaded:
            return
        if self.errors:
            self.notify(f"{len(self.errors)} error(s) to fix first: {self.errors[0]}", title="Not launched",
                        severity="error", timeout=10)
            return
        self.launch()

    @work(thread=True, exclusive=True, group="editor-launch", exit_on_error=False)
    def launch(self) -> None:
        from tuitrain.profile import Profile, ProfileError, apply_overrides
        from tuitrain.runs.relaunch import launch
        from tuitrain.runs.start import StartError
        from tuitrain.tui.messages import RunStarted

        try:
            data = apply_overrides(copy.deepcopy(self.data), self.app.launch_overrides)
            profile = Profile(path=self.planned_path, data=data)
            paths = launch(profile, self.app.runs_root, cwd=self.app.cwd, hardware=self.app.hardware)
        except (ProfileError, StartError, OSError) as exc:
            self.app.call_from_thread(self.notify, str(exc), title="Not launched", severity="error", timeout=10)
            return
        self.app.post_message(RunStarted(str(paths.root)))

    def action_copy_command(self) -> None:
        if not self.command:
            self.notify("no command yet: fix the errors first", severity="warning")
            return
        self.app.copy_to_clipboard(self.command)
        errors = len(self.errors)
        self.notify("command copied (through the terminal's clipboard, OSC 52)"
                    + (f"; the checks report {errors} error(s): it would not start as it is" if errors else ""),
                    severity="warning" if errors else "information")

    def action_back(self) -> None:
        from tuitrain.tui.screens.confirm import ConfirmScreen

        if not self.dirty:
            self.app.pop_screen()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.pop_screen()

        self.app.push_screen(ConfirmScreen("Leave the editor? Unsaved changes are lost.", yes="Leave"), answered)
