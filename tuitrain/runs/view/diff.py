"""What differs between two runs, one line each, the likeliest causes of a different result first: data, code,
the profile (TrainingArguments as the Trainer saw them where both runs wrote training_args.json), then versions,
hardware and host, from each machine's manifest (tuitrain.runs.keeper.manifest). A resumed run names its lineage.

`read_facts` reads a run directory; everything else takes data and returns data (`diff_runs`, `machine_differences`,
`Difference.line`). `tuitrain diff` and the app's Compare screen print the lines.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Fields
from tuitrain.runs.keeper.manifest import CodeFact, DataFact, GpuFacts, Manifest, TorchBuild

KIND_ORDER = ("lineage", "data", "code", "profile", "versions", "hardware", "host", "note")
DATA_KEYS = ("data.train_file", "data.validation_file")
CODE_KEYS = ("script.path", "script.module", "script.workdir", "script.args")
# TrainingArguments fields that name this run rather than how it trains (its output folder is <run dir>/…: read as
# "<run>/…" on both sides, so only an output_dir set apart in the profile shows)
RUN_OWN_ARGS = frozenset({"logging_dir"})
# a TrainingArguments field the profile sets under another name: not said twice
ARG_ALIASES = {"seed": "run.seed"}
VERSION_FIELDS: tuple[tuple[Literal["cuda", "hip", "cudnn", "nccl"], str], ...] = (
    ("cuda", "torch CUDA"), ("hip", "torch HIP"), ("cudnn", "cuDNN"), ("nccl", "NCCL"))
HOST_FIELDS: tuple[tuple[str, Literal["cpu_model", "cpu_count", "name", "os", "kernel"], str], ...] = (
    ("hardware", "cpu_model", "CPU"), ("hardware", "cpu_count", "CPUs"), ("host", "name", "host"), ("host", "os", "OS"),
    ("host", "kernel", "kernel"))
NO_TORCH: TorchBuild = {"cuda": None, "hip": None, "git_version": None, "cudnn": None, "nccl": None}
MISSING = "(absent)"
NO_DIFFERENCE = "no difference found in the profile, TrainingArguments, data files, code, versions or hardware"


@dataclass(frozen=True)
class RunFacts:
    """What `diff_runs` compares of one run."""

    id: str
    root: str
    record: RunRecord
    profile: Mapping[str, Any]  # the frozen profile.toml, defaults filled in
    training_args: Mapping[str, Any] | None  # training_args.json, None before rank 0 wrote it
    manifests: Mapping[int, Manifest]  # machine rank → its manifest
    ancestors: tuple[tuple[str, int], ...] = ()  # (run id, step of the checkpoint its child resumed from), oldest first
    damaged: Mapping[int, str] = field(default_factory=dict)  # machine rank → why its manifest is unreadable


@dataclass(frozen=True)
class Difference:
    kind: str  # one of KIND_ORDER
    key: str
    a: object = None
    b: object = None
    machine: str | None = None  # "machine 1 (gpu-b)" in a run on several machines
    text: str | None = None  # a line of its own instead of "a → b" (lineage, notes)

    def line(self) -> str:
        where = f"{self.machine}: " if self.machine else ""
        body = self.text if self.text is not None else f"{value_text(self.a)} → {value_text(self.b)}"
        return f"{self.kind:<9} {where}{self.key}  {body}".rstrip()

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "key": self.key, "a": self.a, "b": self.b, "machine": self.machine,
                "text": self.text, "line": self.line()}


def value_text(value: object) -> str:
    if value is None:
        return MISSING
    if isinstance(value, str):
        return value if value else '""'
    return json.dumps(value, sort_keys=True, default=str)


# ---------------------------------------------------------------------------------------------- reading a run
def read_facts(paths: RunPaths, record: RunRecord) -> RunFacts:
    from tuitrain.profile.schema import Profile, settings_with_defaults
    from tuitrain.runs.keeper.manifest import read_frozen_profile, scan_manifests
    from tuitrain.runs.view.lineage import read_lineage

    frozen = read_frozen_profile(paths)
    try:
        profile: Mapping[str, Any] = settings_with_defaults(Profile(path=None, data=frozen)) if frozen else {}
    except Exception:  # noqa: BLE001 — a damaged frozen profile compares as written
        profile = frozen
    try:
        args = json.loads(paths.training_args.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        args = None
    ancestors = tuple((a.run_id, a.until_step) for a in read_lineage(paths, record).ancestors)
    manifests, damaged = scan_manifests(paths.root)
    return RunFacts(paths.id, str(paths.root), record, profile, args if isinstance(args, dict) else None, manifests,
                    ancestors, damaged)


# ---------------------------------------------------------------------------------------------- comparing
def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"training": {"learning_rate": 1e-3}} → {"training.learning_rate": 1e-3}; lists stay values."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _own(value: Any, root: str) -> Any:
    """A value with the run's own directory read as <run> (its default output folder is its own on each side)."""
    if isinstance(value, str) and root and root in value:
        return value.replace(root, "<run>")
    if isinstance(value, list):
        return [_own(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _own(v, root) for k, v in value.items()}
    return value


def _same(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return float(a) == float(b)
    return bool(a == b)


def profile_differences(a: RunFacts, b: RunFacts) -> list[Difference]:
    """The frozen profiles' keys (data files and the script aside), [training] as the Trainer saw it where both runs
    have training_args.json."""
    fa, fb = flatten(_own(dict(a.profile), a.root)), flatten(_own(dict(b.profile), b.root))
    both_args = a.training_args is not None and b.training_args is not None
    out: list[Difference] = []
    for key in sorted({*fa, *fb}):
        if key in DATA_KEYS or key in CODE_KEYS or (both_args and key.startswith("training.")):
            continue
        if not _same(fa.get(key), fb.get(key)):
            out.append(Difference("profile", key, fa.get(key), fb.get(key)))
    if both_args:
        assert a.training_args is not None and b.training_args is not None
        ta, tb = _own(dict(a.training_args), a.root), _own(dict(b.training_args), b.root)
        said = {d.key for d in out}
        for key in sorted({*ta, *tb}):
            if key in RUN_OWN_ARGS or ARG_ALIASES.get(key) in said:
                continue
            if not _same(ta.get(key), tb.get(key)):
                out.append(Difference("profile", f"training.{key}", ta.get(key), tb.get(key)))
    return out


def code_differences(a: RunFacts, b: RunFacts) -> list[Difference]:
    """The script the profile names (path, module, arguments) as a code line."""
    fa, fb = flatten(dict(a.profile)), flatten(dict(b.profile))
    return [Difference("code", key, fa.get(key), fb.get(key)) for key in CODE_KEYS
            if not _same(fa.get(key), fb.get(key))]


def _data_fact(manifest: Manifest | None, key: str) -> DataFact | None:
    return next((d for d in manifest["data"] if d["key"] == key), None) if manifest else None


def _file_text(path: object, fact: DataFact | None, show_path: bool) -> str:
    if fact is None:
        return value_text(path)
    said = f"sha256 {fact['sha256'][:12]}" if fact["sha256"] else fact.get("error") or "not hashed"
    said += f", {fact['size']} bytes" if fact["size"] is not None else ""
    return f"{path} ({said})" if show_path else said


def data_differences(a: RunFacts, b: RunFacts, machines: list[tuple[int, str | None]]) -> list[Difference]:
    """Each data file by path, then by content on each machine (each reads its own copy)."""
    fa, fb = flatten(dict(a.profile)), flatten(dict(b.profile))
    out: list[Difference] = []
    for key in DATA_KEYS:
        pa, pb = fa.get(key), fb.get(key)
        if not _same(pa, pb):  # another file: said once, with the first machine's hashes
            first = machines[0][0]
            da, db = _data_fact(a.manifests.get(first), key), _data_fact(b.manifests.get(first), key)
            out.append(Difference("data", key, pa, pb, None, f"{_file_text(pa, da, True)} → {_file_text(pb, db, True)}"))
            continue
        for rank, label in machines:
            da, db = _data_fact(a.manifests.get(rank), key), _data_fact(b.manifests.get(rank), key)
            if da and db and da["sha256"] and db["sha256"] and da["sha256"] != db["sha256"]:
                out.append(Difference("data", key, pa, pb, label,
                                      f"{pa}: content differs: {_file_text(pa, da, False)} → {_file_text(pb, db, False)}"))
    return out


def _code_state(entry: CodeFact | None) -> tuple[object, ...] | None:
    if entry is None:
        return None
    return entry["root"], entry["commit"], bool(entry["dirty"]), entry["diff_sha256"], tuple(entry["untracked"])


def code_text(entry: CodeFact | None) -> str:
    """"abc1234 (main), dirty: 2 changed, 1 untracked" — or that the folder is no git repository."""
    if entry is None:
        return "not a git repository"
    text = f"{entry['root']} {(entry['commit'] or 'no commit')[:12]}" + (f" ({entry['branch']})" if entry["branch"] else "")
    if entry["dirty"]:
        untracked = [f"{len(entry['untracked'])} untracked"] if entry["untracked"] else []
        text += ", dirty: " + ", ".join([f"{entry['changed']} changed", *untracked])
    return text


def gpu_text(gpus: GpuFacts | None) -> str | None:
    """"2 × NVIDIA H100 80GB HBM3 (80 GiB)", "none" — the models and memory of the GPUs a run used."""
    if gpus is None:
        return None
    names = Counter((d["name"] or "?") + (f" ({d['memory_total'] / 1024:.0f} GiB)" if d["memory_total"] is not None else "")
                    for d in gpus["devices"])
    return ", ".join(f"{count} × {name}" for name, count in names.items()) or "none"


def manifest_differences(ma: Manifest, mb: Manifest, label: str | None) -> list[Difference]:
    """Two machines' manifests (of two runs, or two machines of one run): code, versions, hardware, host."""
    out: list[Difference] = []
    code_a, code_b = {c["role"]: c for c in ma["code"]}, {c["role"]: c for c in mb["code"]}
    for role in sorted({*code_a, *code_b}):
        if _code_state(code_a.get(role)) != _code_state(code_b.get(role)):
            out.append(Difference("code", role, None, None, label,
                                  f"{code_text(code_a.get(role))} → {code_text(code_b.get(role))}"))
    va, vb = ({"python": m["python"]["version"], **m["packages"]} for m in (ma, mb))
    for name in ("python", *sorted({*va, *vb} - {"python"})):
        if va.get(name) != vb.get(name):
            out.append(Difference("versions", name, va.get(name), vb.get(name), label))
    ba, bb = ma["torch_build"] or NO_TORCH, mb["torch_build"] or NO_TORCH
    out += [Difference("versions", name, ba[key], bb[key], label) for key, name in VERSION_FIELDS if ba[key] != bb[key]]
    ga, gb = ma["gpus"], mb["gpus"]
    if gpu_text(ga) != gpu_text(gb):
        out.append(Difference("hardware", "GPUs", gpu_text(ga), gpu_text(gb), label))
    if ga is not None and gb is not None and ga["driver"] != gb["driver"]:
        out.append(Difference("hardware", "GPU driver", ga["driver"], gb["driver"], label))
    ha, hb = ma["host"], mb["host"]
    return out + [Difference(kind, name, ha[key], hb[key], label) for kind, key, name in HOST_FIELDS if ha[key] != hb[key]]


def _machines(a: RunFacts, b: RunFacts) -> list[tuple[int, str | None]]:
    """(machine rank, its label or None in one-machine runs) of the machines either run had."""
    ranks = sorted({*a.manifests, *b.manifests}) or [0]
    several = len(ranks) > 1 or Fields(a.record).num_machines > 1 or Fields(b.record).num_machines > 1
    if not several:
        return [(rank, None) for rank in ranks]
    out: list[tuple[int, str | None]] = []
    for rank in ranks:
        named = " / ".join(dict.fromkeys(m[rank]["host"]["name"] for m in (a.manifests, b.manifests) if rank in m))
        out.append((rank, f"machine {rank}" + (f" ({named})" if named else "")))
    return out


def lineage_differences(a: RunFacts, b: RunFacts) -> list[Difference]:
    """How the two runs are related by resuming: which run continues which, from which checkpoint."""
    out: list[Difference] = []
    for child, other in ((b, a), (a, b)):
        if not child.ancestors:
            continue
        chain = " ← ".join([child.id, *(f"{run} (checkpoint-{step})" for run, step in reversed(child.ancestors))])
        parent, step = child.ancestors[-1]
        if other.id in [run for run, _ in child.ancestors]:
            text = f"{child.id} resumed {parent} from checkpoint-{step}: the profile lines are its overrides ({chain})"
        else:
            text = f"{child.id} resumed {parent} from checkpoint-{step} ({chain})"
        out.append(Difference("lineage", "resumed", parent, child.id, None, text))
    return out


def restart_differences(a: RunFacts, b: RunFacts) -> list[Difference]:
    """A run that restarted (`[run] restarts`): how many times, from where; and each batch that `on_oom =
    "split_batch"` split, which its frozen profile (compared below) shows only as it ended."""
    out: list[Difference] = []
    for run in (a, b):
        restarts = Fields(run.record).restarts
        if not restarts:
            continue
        last = restarts[-1]
        began = last.get("resume_from")
        begun = Path(began).name if began else "the beginning"
        out.append(Difference("lineage", "restarted", None, None, None,
                              f"{run.id} restarted {len(restarts)} time{'s' if len(restarts) != 1 else ''}: attempt "
                              f"{last.get('attempt', '?')} began from {begun}"))
        for restart in restarts:
            if "batch" in restart:
                (size, smaller), (steps, more) = (restart["batch"]["per_device_train_batch_size"],
                                                  restart["batch"]["gradient_accumulation_steps"])
                out.append(Difference("profile", "run.on_oom", None, None, None,
                                      f"{run.id} split its batch after running out of memory (attempt "
                                      f"{restart.get('attempt', '?')}): training.per_device_train_batch_size "
                                      f"{size} → {smaller}, training.gradient_accumulation_steps {steps} → {more}, "
                                      "the same effective batch"))
    return out


def diff_runs(a: RunFacts, b: RunFacts) -> list[Difference]:
    """Every difference between two runs, the likeliest causes first (KIND_ORDER), each said once."""
    machines = _machines(a, b)
    out = lineage_differences(a, b) + restart_differences(a, b) + data_differences(a, b, machines) \
        + code_differences(a, b) + profile_differences(a, b)
    for rank, label in machines:
        ma, mb = a.manifests.get(rank), b.manifests.get(rank)
        if ma is not None and mb is not None:
            out += manifest_differences(ma, mb, label)
        elif ma is not None or mb is not None:
            missing = b if mb is None else a
            why = missing.damaged.get(rank)
            out.append(Difference("note", "manifest", None, None, label,
                                  (f"run {missing.id}'s is damaged ({why})" if why else
                                   f"run {missing.id} has none (a run from before manifests, or its machine never "
                                   "started)") + ": versions, hardware and data hashes are not compared"))
    return sorted(out, key=lambda d: KIND_ORDER.index(d.kind))  # stable: each kind keeps its own order


def machine_differences(facts: RunFacts) -> list[Difference]:
    """How each other machine of one run differs from machine 0 (versions above all: the doctor's question, after
    the fact)."""
    first = facts.manifests.get(0)
    if first is None:
        return []
    out: list[Difference] = []
    for rank, manifest in sorted(facts.manifests.items()):
        if rank == 0:
            continue
        host = manifest["host"]["name"]
        label = f"machine {rank}" + (f" ({host})" if host else "")
        out += [d for d in manifest_differences(first, manifest, label) if d.kind not in ("host", "code")]
    return sorted(out, key=lambda d: KIND_ORDER.index(d.kind))


@dataclass
class RunDiff:
    a: RunFacts
    b: RunFacts
    differences: list[Difference] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [d.line() for d in self.differences]

    def to_dict(self) -> dict[str, object]:
        return {"a": self.a.id, "b": self.b.id, "differences": [d.to_dict() for d in self.differences]}


def compare_runs(a: RunPaths, record_a: RunRecord, b: RunPaths, record_b: RunRecord) -> RunDiff:
    """Read both runs and compare them (what `tuitrain diff` and the app call)."""
    fa, fb = read_facts(a, record_a), read_facts(b, record_b)
    return RunDiff(fa, fb, diff_runs(fa, fb))


def short_manifest(manifests: Mapping[int, Manifest]) -> list[tuple[str, str]]:
    """(label, text) lines `tuitrain status` shows: python and the key versions, the GPUs, the code."""
    manifest = manifests.get(0) or next(iter(manifests.values()), None)
    if manifest is None:
        return []
    packages, build = manifest["packages"], manifest["torch_build"] or NO_TORCH
    torch = packages.get("torch")
    if torch and (build["cuda"] or build["hip"]):
        torch += f" (CUDA {build['cuda']})" if build["cuda"] else f" (HIP {build['hip']})"
    versions = [f"python {manifest['python']['version']}"]
    versions += [f"{name} {value}" for name, value in (("torch", torch), ("transformers", packages.get("transformers")))
                 if value]
    lines = [("versions", "   ".join(versions))]
    if (gpus := manifest["gpus"]) is not None:
        driver = f", driver {gpus['driver']}" if gpus["driver"] and gpus["devices"] else ""
        lines.append(("gpu", (gpu_text(gpus) or "none") + driver))
    host = manifest["host"]
    lines.append(("host", f"{host['name']}   {host['os']}   {host['cpu_count'] or '?'} CPUs"))
    for entry in manifest["code"]:
        diff = f" (diff in machines/{entry['diff_file']})" if entry["diff_file"] else ""
        lines.append((f"code {entry['role']}"[:10], code_text(entry) + diff))
    return lines

