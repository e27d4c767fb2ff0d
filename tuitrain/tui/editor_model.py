"""The profile editor's model: the profile being edited (a plain dict, as written: no defaults
filled in), where it came from and where it saves, whether it changed, the latest checks and plan,
and the decisions the editor makes about them. No Textual here: the screen draws this model and
runs its blocking methods (`read`, `check`, `save`, `launch`) in workers; tests drive it directly.

The profile dict's paths and `--set` overrides are `tui.profile_edits`; Save As's targets and
rewriting are `tui.save_as`.
"""

from __future__ import annotations

import builtins
import copy
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuitrain.errors import TuitrainError
from tuitrain.tui.fields import REMOVE
from tuitrain.tui.profile_edits import MACHINES, get_path, in_schema_order, machine_of, overrides_between, set_path
from tuitrain.tui.save_as import save_as_outcome, save_as_target, shown_path

if TYPE_CHECKING:
    from tuitrain.profile.paths import Moved, Rule


CPU_MAPPING = ('accelerator = "cpu": the ranks train on the CPU and see no GPU (CUDA_VISIBLE_DEVICES is empty); '
               "gpus is not used")


@dataclass
class Loaded:
    """What reading the profile gave: its data, the installed TrainingArguments' fields, whether the
    file has comments (saving keeps them), and what an accelerate import left out."""

    data: dict[str, Any]
    training_specs: dict[str, Any] | None
    has_comments: bool
    imported_notes: list[str] = field(default_factory=list)


@dataclass
class Check:
    """One check of the profile: the validator's and the planner's problems, and the plan (or why
    there is none)."""

    number: int
    problems: list[Any]
    plan: Any = None  # a LaunchPlan when the profile has no errors and could be planned
    plan_error: str = ""  # "TypeError: …" when the planner could not read a half-typed profile

    @property
    def command(self) -> str:
        """The command line; for several machines, each machine's, under a comment naming it."""
        if self.plan is None:
            return ""
        machines = getattr(self.plan, "machines", None)
        if machines is None:
            return str(self.plan.command_line())
        return "\n".join(f"# machine {m.machine_rank}: {m.host}, in {m.workdir}\n{m.command_line()}"
                         for m in machines)


class LoadError(TuitrainError):
    """The profile (or the accelerate config) cannot be read into the form; the message says why."""


class EditorModel:
    def __init__(self, path: Path | None, cwd: Path, accelerate_config: Path | None = None) -> None:
        """`path`: the profile file (None: a new one; a built-in one is a template: saving asks for
        a file). `accelerate_config`: a new profile whose [distributed] and [hardware] come from that
        accelerate config file (the rest from the built-in demo)."""
        from tuitrain.profile.lookup import BUILTIN_DIR

        self.path = Path(path) if path else None
        self.cwd = Path(cwd)
        self.accelerate_config = Path(accelerate_config) if accelerate_config else None
        self.template: Path | None = None
        if self.path is not None and self.path.resolve().parent == BUILTIN_DIR.resolve():
            self.template, self.path = self.path, None
        self.data: dict[str, Any] = {}
        self.on_disk: dict[str, Any] | None = None  # the profile as its file holds it (None: no file yet)
        self.training_specs: dict[str, Any] | None = None
        self.has_comments = False
        self.imported_notes: list[str] = []
        self.loaded = False
        self.dirty = False
        self.problems: list[Any] = []
        self.plan: Any = None
        self.plan_error = ""
        self.command = ""
        self._checks = 0

    # ------------------------------------------------------------------------------ loading
    def read(self) -> Loaded:
        """Read the profile (blocking: run it in a worker). Raises LoadError."""
        from tuitrain.profile import ProfileError, training_args_fields
        from tuitrain.profile.load import parse_toml, read_profile_text
        from tuitrain.profile.lookup import BUILTIN_DIR
        from tuitrain.profile.save import has_comments

        specs = training_args_fields()
        source = self.path or self.template or BUILTIN_DIR / "demo.toml"
        try:
            text = read_profile_text(source, str(source))
            data = parse_toml(text, str(source))
        except ProfileError as exc:
            raise LoadError(str(exc)) from exc
        if self.path is None and self.template is None:
            data.setdefault("run", {})["name"] = "my-profile"
        notes: list[str] = []
        if self.accelerate_config is not None:
            from tuitrain.profile.accelerate_import import import_accelerate_file

            try:
                result = import_accelerate_file(self.accelerate_config)
            except (OSError, ValueError) as exc:
                raise LoadError(f"{self.accelerate_config}: cannot read it: {exc}") from exc
            notes = [str(p) for p in result.problems]
            if not result.errors:
                data = result.merge_into(data)
            data.setdefault("run", {})["name"] = "from-accelerate"
        return Loaded(data, specs, has_comments(text) and self.path is not None, notes)

    def take(self, loaded: Loaded) -> None:
        """The read profile becomes the one being edited."""
        self.data = loaded.data
        self.on_disk = copy.deepcopy(loaded.data) if self.path is not None else None
        self.training_specs = loaded.training_specs
        self.has_comments = loaded.has_comments
        self.imported_notes = loaded.imported_notes
        self.loaded = True

    @property
    def brand_new(self) -> bool:
        """A new profile starting from the demo (not a template's copy, an import, or a saved file)."""
        return self.path is None and self.template is None and self.accelerate_config is None

    @property
    def notice(self) -> str:
        """What the editor says above the form about where this profile comes from ("" for nothing)."""
        notice = ""
        if self.path is None:
            notice = (f"a copy of the built-in {self.template.stem} profile: ctrl+s saves it as a new file"
                      if self.template else "new profile, starting from the built-in demo: ctrl+s saves it as a new file")
        if self.accelerate_config is not None:
            notice = (f"[distributed] and [hardware] imported from {self.accelerate_config}; the rest from the built-in "
                      "demo: ctrl+s saves it as a new file")
            if self.imported_notes:
                notice += "\n" + "\n".join(self.imported_notes)
        return notice

    # ------------------------------------------------------------------------------ editing
    def get(self, path: tuple[str, ...]) -> Any:
        machine = machine_of(path)
        if machine is not None:
            listed = self.machines
            index, key = machine
            item = listed[index] if index < len(listed) else None
            return item.get(key) if isinstance(item, dict) else None
        return get_path(self.data, path)

    def set(self, path: tuple[str, ...], value: Any) -> None:
        """Set a key (REMOVE: drop it; tables left empty go too); the profile is then modified.
        A machine's key (`machine_path`) is set in that [[distributed.machines]] table, which stays
        even when emptied (its place is its rank)."""
        machine = machine_of(path)
        if machine is not None:
            index, key = machine
            listed = self.machines
            if index >= len(listed) or not isinstance(listed[index], dict):
                return
            item = listed[index]
            if value is REMOVE:
                item.pop(key, None)
            else:
                item[key] = value
            in_schema_order(item)
        else:
            set_path(self.data, path, value)
        self.dirty = True

    # ------------------------------------------------------------------------------ what is ignored
    def ignored_keys(self) -> dict[str, str]:
        """The keys (and tables) set in the profile that the chosen model or data source makes the
        engine ignore, by dotted key, each with why (naming the key that makes it so)."""
        model: dict[str, Any] = self.data["model"] if isinstance(self.data.get("model"), dict) else {}
        data: dict[str, Any] = self.data["data"] if isinstance(self.data.get("data"), dict) else {}
        out: dict[str, str] = {}
        name, tokenizer = model.get("name_or_path"), model.get("tokenizer")
        if name and "config" in model:
            out["model.config"] = ("ignored: model.name_or_path is set, so that pretrained model is loaded, "
                                   "not one built from this config; remove this section")
        if (tokenizer or name) and "train_tokenizer" in model:
            which = "model.tokenizer" if tokenizer else "model.name_or_path"
            out["model.train_tokenizer"] = (f"ignored: {which} is set, so its tokenizer is used, not one trained "
                                            "on the text; remove this section")
        keys: tuple[str, ...]
        if data.get("generate"):
            why, keys = "data.generate is set (generated data)", (
                "dataset", "dataset_config", "train_file", "validation_file", "train_split", "validation_split")
        elif data.get("train_file"):
            why, keys = "data.train_file is set", ("dataset", "dataset_config", "train_split", "validation_split")
        elif not data.get("dataset"):
            why, keys = "they are data.dataset's, which is not set", ("train_split", "validation_split")
        else:
            why, keys = "", ()
        out.update((f"data.{key}", f"ignored: {why}") for key in keys if key in data)
        if not data.get("generate"):
            out.update((f"data.{key}", "ignored: used with data.generate only, which is not set")
                       for key in ("num_train", "num_validation") if key in data)
        return out

    # ------------------------------------------------------------------------------ starting points
    @property
    def folder_shown(self) -> str:
        """The folder the profile's relative paths start from, as the user sees it (from the working folder)."""
        return shown_path(self.planned_path.parent, self.cwd) + "/"

    def start_question(self, what: str) -> str:
        """What a starting point asks: "model" (a model folder or Hub id) or "data" (the training file)."""
        where = f"from the working folder, written from the profile's folder, {self.folder_shown}"
        if what == "model":
            return (f"The pretrained model: a folder ({where}) or a Hub id. Its tokenizer is used; [model.config] "
                    "and [model.train_tokenizer] are dropped:")
        return f"The training file (.csv, .json, .jsonl or .parquet; {where}). The generated data set is dropped:"

    def _typed_path(self, text: str, rule: Rule) -> str:
        """A path typed relative to the working folder, written relative to the profile's folder (where
        the loader starts a relative path); an absolute path, or text that is no path (a Hub id, for a
        `rule` of "if_exists"), is kept as typed."""
        from tuitrain.profile.paths import is_relative_local, moved_path

        if not is_relative_local(text, rule, self.cwd):
            return text
        return moved_path(text, self.cwd, self.planned_path.parent)

    def start_from_model(self, folder: str) -> None:
        """A new profile fine-tuning a pretrained model: model.name_or_path is `folder` (a folder, or
        a Hub id), and the demo's from-scratch model and trained tokenizer go."""
        for key in ("config", "train_tokenizer", "tokenizer"):
            self.set(("model", key), REMOVE)
        self.set(("model", "name_or_path"), self._typed_path(folder.strip(), "if_exists"))

    def start_from_data(self, train: str, validation: str | None = None) -> None:
        """A new profile on data files: data.train_file (and validation_file) are these, and the
        demo's generated data set (generate, num_train, num_validation) goes."""
        for key in ("generate", "num_train", "num_validation", "dataset", "dataset_config"):
            self.set(("data", key), REMOVE)
        self.set(("data", "train_file"), self._typed_path(train.strip(), "always"))
        self.set(("data", "validation_file"),
                 self._typed_path(validation.strip(), "always") if validation else REMOVE)

    # ------------------------------------------------------------------------------ GPUs
    # [hardware] gpus lists physical GPUs in the order they become cuda:0, cuda:1, …: the picker
    # keeps that order (a tick goes last, an untick takes out that one GPU) and moves one GPU at a time.
    @property
    def gpu_entries(self) -> list[Any]:
        """hardware.gpus as written (indices or UUIDs); [] when absent or not a list."""
        gpus = self.get(("hardware", "gpus"))
        return list(gpus) if isinstance(gpus, list) else []

    def ticked_gpus(self, devices: Sequence[Any]) -> list[int | None]:
        """The physical (NVML) index each entry of hardware.gpus names, in cuda:N order (None: not on
        this machine)."""
        from tuitrain.hardware.mapping import resolve

        return [gpu.index if gpu is not None else None
                for gpu, _mig in (resolve(entry, devices) for entry in self.gpu_entries)]

    def tick_gpus(self, ticked: Sequence[int], devices: Sequence[Any]) -> None:
        """The picker's ticked GPUs are now `ticked` (in the order they were ticked): entries still
        ticked keep their places (and their spelling: a UUID stays a UUID), new ones go last, an
        unticked one leaves; entries naming no GPU of this machine stay (the validator names them)."""
        entries = self.gpu_entries
        named = self.ticked_gpus(devices)
        kept = [entry for entry, physical in zip(entries, named, strict=True) if physical is None or physical in ticked]
        added = [index for index in ticked if index not in named]
        if kept + added != entries:
            self.set(("hardware", "gpus"), kept + added if kept + added else REMOVE)

    def move_gpu(self, physical: int, delta: int, devices: Sequence[Any]) -> bool:
        """Move a ticked GPU earlier (-1) or later (+1) in cuda:N order; False when it is not ticked
        or already at that end."""
        entries = self.gpu_entries
        named = self.ticked_gpus(devices)
        if physical not in named:
            return False
        at = named.index(physical)
        to = at + delta
        if not 0 <= to < len(entries):
            return False
        entries[at], entries[to] = entries[to], entries[at]
        self.set(("hardware", "gpus"), entries)
        return True

    @property
    def on_cpu(self) -> bool:
        """The form asks for CPU ranks: no GPU becomes any cuda:N."""
        return self.get(("hardware", "accelerator")) == "cpu"

    def gpu_mapping_lines(self, devices: Sequence[Any]) -> list[str]:
        """Which physical GPU becomes which cuda:N with the GPUs as they are ticked, as the planner
        maps them ("physical GPU 2 → cuda:0"); with none ticked, every GPU."""
        from tuitrain.hardware.mapping import map_devices

        if self.on_cpu:
            return [CPU_MAPPING]
        order = self.get(("hardware", "device_order")) or "PCI_BUS_ID"
        try:
            mapping = map_devices(devices, self.gpu_entries or None, order)
        except ValueError as exc:  # an unknown device_order: the validator says so beside its field
            return [str(exc)]
        return list(mapping.lines) + list(mapping.notes)

    # ------------------------------------------------------------------------------ machines
    @property
    def machines(self) -> list[Any]:
        """The [[distributed.machines]] tables as written (the first is the main machine, rank 0);
        [] when there are none, or when the key holds something other than a list."""
        listed = get_path(self.data, MACHINES)
        return listed if isinstance(listed, list) else []

    def add_machine(self) -> str | None:
        """Add an empty machine at the end (its host is then typed); returns why not, or None."""
        listed = get_path(self.data, MACHINES)
        if listed is not None and not isinstance(listed, list):
            return "distributed.machines is not a list of [[distributed.machines]] tables: fix it in the file first"
        if listed is None:
            set_path(self.data, MACHINES, [{}])
        else:
            listed.append({})
        self.dirty = True
        return None

    def remove_machine(self, index: int) -> None:
        """Remove one machine; removing the last one removes [[distributed.machines]] itself."""
        listed = self.machines
        if 0 <= index < len(listed):
            del listed[index]
            if not listed:
                set_path(self.data, MACHINES, REMOVE)
            self.dirty = True

    def move_machine(self, index: int, delta: int) -> int:
        """Move one machine earlier (-1) or later (+1): its place is its rank, the first is the main
        machine. Returns its new index (unchanged at either end)."""
        listed = self.machines
        to = index + delta
        if not (0 <= index < len(listed) and 0 <= to < len(listed)):
            return index
        listed[index], listed[to] = listed[to], listed[index]
        self.dirty = True
        return to

    @property
    def strategy(self) -> str:
        return self.get(("distributed", "strategy")) or "single"

    def extra_training_keys(self, shown: Collection[str]) -> list[str]:
        """The file's [training] keys that are not among the form's `shown` fields (raw rows)."""
        return [k for k in (self.data.get("training") or {}) if k not in shown]

    def add_training_key(self, key: str, value: Any) -> str | None:
        """Add a raw [training] key; returns why not (for the user) or None when added."""
        key = key.strip()
        if not key:
            return "give the key's name first"
        if value is REMOVE:
            return "give a value (a TOML value: 10, 0.5, true, \"text\", [1, 2])"
        self.set(("training", key), value)
        return None

    def unused_by_strategy(self, used: Collection[str]) -> tuple[list[str], list[str]]:
        """[distributed] keys set away from their default, and tables set, that the strategy does
        not use (`used`): listed by the form so they can be emptied or removed (they would be saved
        unseen otherwise)."""
        from tuitrain.profile.schema import SCHEMA, KeySpec, TableSpec

        section: dict[str, Any] = SCHEMA["distributed"]
        keys = [key for key, spec in section.items() if key not in used and isinstance(spec, KeySpec)
                and self.get(("distributed", key)) not in (None, spec.default)]
        tables = [key for key, spec in section.items() if key not in used and isinstance(spec, TableSpec)
                  and self.get(("distributed", key))]
        return keys, tables

    def disabled_plugin_keys(self) -> builtins.set[str]:  # `set` in this class is EditorModel.set
        """A DeepSpeed JSON replaces the plugin fields (accelerate refuses both): while one is named,
        the plugin keys with no value of their own are disabled (a value already set keeps its error)."""
        from tuitrain.profile.schema import DEEPSPEED_PLUGIN_KEYS

        if not self.get(("distributed", "deepspeed", "config_file")):
            return set()
        return {key for key in DEEPSPEED_PLUGIN_KEYS if self.get(("distributed", "deepspeed", key)) is None}

    # ------------------------------------------------------------------------------ checking
    @property
    def planned_path(self) -> Path:
        """The file the profile is checked and planned as: an unsaved one as ./profiles/new.toml
        (where saving puts it), so its relative paths mean what they will mean once saved."""
        return self.path or self.cwd / "profiles" / "new.toml"

    def begin_check(self) -> tuple[dict[str, Any], int]:
        """A copy of the profile as it is now, and the number of this check (only the latest is taken)."""
        self._checks += 1
        return copy.deepcopy(self.data), self._checks

    def check(self, data: dict[str, Any], number: int, runs_root: Path, hardware: Any = None,
              path: Path | None = None) -> Check:
        """Validate and plan a copy of the profile (blocking: run it in a worker), as the file `path`
        (default: where it is, or will be, saved)."""
        from tuitrain.profile import Profile, validate_profile

        label = str(path or self.path or "<new profile>")
        planned = path or self.planned_path
        problems = validate_profile(data, label, planned.resolve().parent)
        if any(p.is_error for p in problems):
            return Check(number, problems)
        try:
            plan = self._plan(Profile(path=planned, data=data), runs_root, hardware)
        except Exception as exc:  # noqa: BLE001 - a half-typed profile the planner cannot read: say why
            return Check(number, problems, plan_error=f"{type(exc).__name__}: {exc}")
        return Check(number, problems + list(plan.problems), plan)

    def _plan(self, profile: Any, runs_root: Path, hardware: Any) -> Any:
        """The profile's own backend's plan, made before any run directory exists (it names `<new-run>` under
        `runs_root`): a LaunchPlan, or a MachinesPlan (one plan per machine) when the profile lists machines
        (their defaults from this form's folder)."""
        from tuitrain.backends import for_profile

        backend = for_profile(profile.data, hardware=hardware, local_cwd=str(self.cwd))
        return backend.plan(profile, runs_root).plan

    @property
    def checks_begun(self) -> int:
        """How many checks were begun (the latest one's number)."""
        return self._checks

    def take_check(self, check: Check) -> bool:
        """Keep a check's results, unless a later edit's check is on its way (then False)."""
        if check.number != self._checks:
            return False
        self.problems = check.problems
        self.plan = check.plan
        self.plan_error = check.plan_error
        self.command = check.command
        return True

    @property
    def errors(self) -> list[Any]:
        return [p for p in self.problems if p.is_error]

    def problems_by_field(self, fields: Collection[str]) -> dict[str, list[str]]:
        """Each problem's words under the field of its key, or of its nearest parent among `fields`
        (the dotted keys the form shows); a problem with no such field is left out (the summary has it)."""
        by_field: dict[str, list[str]] = {}
        for p in self.problems:
            key = p.key
            while key and key not in fields:
                key = key.rsplit(".", 1)[0] if "." in key else ""
            words = p.message + (f"; {p.fix}" if p.fix else "")
            if p.severity != "error":
                words = f"{p.severity}: {words}"
            if key:
                by_field.setdefault(key, []).append(words)
        return by_field

    # ------------------------------------------------------------------------------ saving
    def save_as_default(self) -> str:
        """What the save-as prompt offers: the file itself, or ./profiles/<run.name>.toml."""
        name = (self.data.get("run") or {}).get("name") or "profile"
        return str(self.path) if self.path else str(Path("profiles") / f"{name}.toml")

    def save_as_target(self, answer: str | None) -> Path | None:
        """The file a save-as answer names, or None (`tui.save_as.save_as_target`)."""
        return save_as_target(answer, self.cwd)

    def save_as_outcome(self, answer: str) -> str:
        """What saving as `answer` would do, said before it is done ("writes profiles/csvcopy.toml")."""
        return save_as_outcome(self.save_as_target(answer), self.path, self.cwd)

    @property
    def own_name(self) -> str:
        """The name the profile has from where it comes from: its file's stem, the template's, or
        the name a new profile starts with."""
        source = self.path or self.template
        if source is not None:
            return source.stem
        return "from-accelerate" if self.accelerate_config is not None else "my-profile"

    def save_as_changes(self, target: Path) -> list[Moved]:
        """What saving to another file changes so that the copy means the same from there, as
        (key, old value, new value): a [run] name that was the profile's own name (its file's stem, or a
        new profile's starting name) becomes the new file's stem, so the new file's runs are listed under
        its own name (a name the user chose is kept); relative paths are rewritten from the new file's
        folder, so they name the same files (tuitrain.profile.paths)."""
        from tuitrain.profile.paths import moved_paths

        if self.path is not None and target.resolve() == self.path.resolve():
            return []
        changes: list[Moved] = []
        run = self.data.get("run")
        name = run.get("name") if isinstance(run, dict) else None
        if name == self.own_name and name != target.stem:
            changes.append((("run", "name"), name, target.stem))
        return changes + moved_paths(self.data, self.planned_path.parent, target.parent)

    def save(self, target: Path, new_path: bool = False, data: dict[str, Any] | None = None) -> list[str]:
        """Write the profile (or `data`, a copy taken from it) to `target` (blocking; atomic, the file's
        comments and layout kept). Returns the writer's warnings; raises ProfileError or OSError. Call
        `saved` once it returns."""
        from tuitrain.profile import save_profile

        if new_path:
            target.parent.mkdir(parents=True, exist_ok=True)
        return [str(w) for w in save_profile(copy.deepcopy(self.data if data is None else data), target)]

    def saved(self, target: Path, data: dict[str, Any] | None = None, check: Check | None = None,
              changes: Sequence[Moved] = ()) -> str:
        """The profile is now `target`'s (no longer new, a template's copy or an import); unmodified
        unless it changed since `data` was copied for saving. `changes`: what Save As changed in that
        copy (`save_as_changes`), made here too unless the key was edited since. `check`: the check of
        what was saved (the one the error pane shows), whose errors the returned note counts. Returns
        what to tell the user."""
        for key, old, new in changes:
            if get_path(self.data, key) == old:
                set_path(self.data, key, new)
        self.path = target
        self.on_disk = copy.deepcopy(self.data if data is None else data)
        self.template = None
        self.accelerate_config = None
        self.imported_notes = []
        self.has_comments = False
        self.dirty = data is not None and data != self.data
        errors = len([p for p in check.problems if p.is_error]) if check is not None else len(self.errors)
        return f"saved {target}" + (f" ({errors} error(s) left: it will not launch until fixed)" if errors else "")

    # ------------------------------------------------------------------------------ launching
    def launch_refusal(self, check: Check | None = None) -> str | None:
        """Why the form cannot be launched as it is (as `check` found it, default the latest check
        taken), or None."""
        errors = [p for p in check.problems if p.is_error] if check is not None else self.errors
        if errors:
            return f"{len(errors)} error(s) to fix first: {errors[0]}"
        return None

    def launch(self, runs_root: Path, overrides: Collection[str] = (), hardware: Any = None,
               data: dict[str, Any] | None = None) -> Path:
        """Start a run of the profile as it is in the form (or of `data`, a copy taken from it), with
        the app's --set overrides (blocking). Returns the run directory; raises a TuitrainError (the
        refusal) or OSError."""
        from tuitrain.backends import for_profile
        from tuitrain.profile import Profile, apply_overrides

        data = apply_overrides(copy.deepcopy(self.data if data is None else data), list(overrides))
        started = for_profile(data, hardware=hardware).start(Profile(path=self.planned_path, data=data), runs_root,
                                                             cwd=self.cwd)
        return started.paths.root

    # ------------------------------------------------------------------------------ accelerate config
    def accelerate_target(self, answer: str) -> Path:
        """The file an export's answer names: a path, relative to the working folder."""
        path = Path(answer).expanduser()
        return path if path.is_absolute() else self.cwd / path

    def accelerate_refusal(self) -> str | None:
        """Why the form's accelerate config cannot be written: an error in [hardware] or [distributed], the tables
        it is made of (the others' errors do not matter to it, as to `tuitrain profile export-accelerate`)."""
        from tuitrain.launch.plan import ACCELERATE_SECTIONS

        wrong = [p for p in self.errors if (p.key or "").split(".")[0] in ACCELERATE_SECTIONS]
        return f"fix {wrong[0].key} first: {wrong[0].message}" if wrong else None

    def accelerate_yaml(self, data: dict[str, Any]) -> str:
        """The accelerate config of `data` (a copy of the form), as export-accelerate writes it (blocking)."""
        from tuitrain.launch.plan import accelerate_config_yaml
        from tuitrain.profile import Profile

        return accelerate_config_yaml(Profile(path=self.planned_path, data=data))

    def copy_command_note(self) -> str:
        """What copying the accelerate command line says (the caller has checked there is one)."""
        errors = len(self.errors)
        return ("accelerate command copied (through the terminal's clipboard, OSC 52); it names a run directory "
                "still to be made (<new-run>): `tuitrain run` (ctrl+y) makes one and starts it there"
                + (f"; the checks report {errors} error(s): it would not start as it is" if errors else ""))

    def run_command(self, runs_root: Path, overrides: Sequence[str] = ()) -> tuple[str, str]:
        """`tuitrain run PROFILE` as it would start this form's run from the working folder: the saved
        file, with --set for each change not saved yet (and the app's own --set), and --runs-dir when
        the app's runs root is not ./runs. Returns (command, what to tell the user); no command for a
        profile with no file yet (it says to save first)."""
        import shlex

        if self.path is None or self.on_disk is None:
            return "", "save the profile first (ctrl+s): `tuitrain run` needs its file"
        shown = shown_path(self.path.resolve(), self.cwd.resolve())
        args = ["tuitrain", "run", shown]
        if Path(runs_root).resolve() != (self.cwd / "runs").resolve():
            args += ["--runs-dir", str(runs_root)]
        changes = overrides_between(self.on_disk, self.data)
        for change in [*changes, *overrides]:
            args += ["--set", change]
        note = "command copied (through the terminal's clipboard, OSC 52)"
        if changes:
            note += f"; the {len(changes)} unsaved change(s) as --set (ctrl+s saves them into the file)"
        errors = len(self.errors)
        if errors:
            note += f"; the checks report {errors} error(s): it would not start as it is"
        return shlex.join(args), note
