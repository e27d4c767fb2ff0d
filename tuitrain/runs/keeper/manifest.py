"""What a run ran on, one file per machine: `machines/machine-M-manifest.json` (RunPaths.machine_manifest).

Written by the supervisor of each machine (a local run's, a node agent's, a Slurm node's: the same `Supervisor`) in a
thread of its own started after the launcher (`ManifestWriter`), so the launch waits for none of it; the supervisor
waits for it (at most FINISH_SECONDS) before it records the run's end. A node agent's file travels home with the
mirror (tuitrain.runs.keeper.mirror); a Slurm node M > 0 keeps it under nodes/machine-M/machines/. Its keys are
`Manifest`'s; a reader takes it checked against them (`scan_manifests`) or names it damaged, in one line.

torch's CUDA build is read from torch/version.py's text and cuDNN/NCCL from the versions of the nvidia-cudnn-cu* and
nvidia-nccl-cu* wheels torch depends on (absent under a conda or source build: null): nothing here imports torch,
so a run whose ranks never got to train (the runs one most wants to compare) still has its manifest.

Data files are hashed once: sha256 by path, size and mtime, kept in `$XDG_CACHE_HOME/tuitrain/file-hashes.json`.
Git is asked with `git -C FOLDER` (GIT_OPTIONAL_LOCKS=0: a status never takes the index lock from a person
committing), each call within GIT_TIMEOUT; no repository, or no git: no entry. The dirty diff (`git diff HEAD`) is
kept beside the manifest, cut at DIFF_LIMIT bytes. Nothing of the environment is recorded (run.json keeps the
variables tuitrain set itself, none of the user's), nor any git remote (a URL may carry a token).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, TypedDict

from tuitrain.rundir.json_shape import checked
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import Rank, RunRecord, Time
from tuitrain.rundir.run import Fields
from tuitrain.runs.keeper.samples import GpuDevice

if TYPE_CHECKING:
    from tuitrain.hardware.sampler import Snapshot

FORMAT: Literal[1] = 1
PACKAGES = ("torch", "transformers", "accelerate", "datasets", "evaluate", "peft", "bitsandbytes", "deepspeed",
            "tuitrain")
CUDNN_WHEELS = ("nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "nvidia-cudnn-cu11")
NCCL_WHEELS = ("nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-nccl-cu11")
DATA_KEYS = (("data", "train_file"), ("data", "validation_file"))
DIFF_LIMIT = 2**20  # bytes of a dirty tree's diff kept beside the manifest
UNTRACKED_LIMIT = 50  # untracked names listed
GIT_TIMEOUT = 5.0
GPU_WAIT_SECONDS = 15.0  # how long the writer waits for the supervisor's first GPU sample
FINISH_SECONDS = 10.0  # how long the supervisor's end waits for the writer
HASHES_FILE = "file-hashes.json"
MIB = 2**20


class PythonFacts(TypedDict):
    version: str  # "3.11.7"
    implementation: str
    executable: str


class TorchBuild(TypedDict):
    """torch's CUDA or HIP build and its cuDNN and NCCL ("12.1", "9.1.0.70"); null where not known."""

    cuda: str | None
    hip: str | None
    git_version: str | None
    cudnn: str | None
    nccl: str | None


class HostFacts(TypedDict):
    name: str
    os: str  # "Ubuntu 22.04.4 LTS"
    kernel: str
    arch: str
    cpu_model: str | None
    cpu_count: int | None
    memory_total: int | None  # MiB


class GpuFacts(TypedDict):
    """The GPUs the run uses, from the supervisor's first GPU sample; `note`: why NVML could not say."""

    driver: str | None
    devices: list[GpuDevice]
    note: str | None


class _DataNeeded(TypedDict):
    key: str  # the profile key naming it: "data.train_file"
    path: str
    size: int | None
    sha256: str | None


class DataFact(_DataNeeded, total=False):
    error: str  # why it has no hash: it is missing, a folder


class CodeFact(TypedDict):
    """The git state of a folder the run's code is in (`git_facts`)."""

    role: str  # "script" (its folder) or "workdir"
    folder: str
    root: str
    commit: str | None
    branch: str | None
    dirty: bool | None
    changed: int
    untracked: list[str]  # the first UNTRACKED_LIMIT
    diff_bytes: int
    diff_sha256: str | None
    diff_truncated: bool
    diff_file: str | None  # the dirty diff beside the manifest: "machine-0-git-0.diff"


class Manifest(TypedDict):
    """machines/machine-M-manifest.json, every key as `base_manifest` writes it."""

    format: Literal[1]
    machine_rank: Rank
    run_id: str | None
    written: Time
    python: PythonFacts
    packages: dict[str, str]  # those of PACKAGES installed, versions read without importing
    torch_build: TorchBuild | None  # null without torch
    host: HostFacts
    gpus: GpuFacts | None  # null: no GPU sample came
    seed: int | None  # [run] seed of the frozen profile
    data: list[DataFact]
    code: list[CodeFact]


class FileHash(TypedDict):
    """A data file's hash in the cache (HASHES_FILE), good while the file's size and mtime are these."""

    size: int
    mtime_ns: int
    sha256: str


class _CondaPackage(TypedDict):  # conda-meta/NAME-VERSION-BUILD.json, the keys read of it
    name: str
    version: str


# ---------------------------------------------------------------------------------------------- the facts
def package_versions(packages: Iterable[str] = PACKAGES) -> dict[str, str]:
    """Those of `packages` installed, with their versions (the doctor's reading: importlib.metadata, no import)."""
    from tuitrain.remote.doctor import local_versions

    found = local_versions(tuple(packages))
    return {name: version for name, version in found.items() if name != "python" and version}


def python_facts() -> PythonFacts:
    return {"version": ".".join(str(n) for n in sys.version_info[:3]),
            "implementation": platform.python_implementation(), "executable": sys.executable}


def _version_py_fields(text: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, value in re.findall(r"^(\w+)\s*(?::[^=\n]*)?=\s*(.+?)\s*$", text, re.MULTILINE):
        value = value.strip()
        out[name] = None if value == "None" else value.strip("'\"")
    return out


def torch_build() -> TorchBuild | None:
    """torch's CUDA/HIP build (torch/version.py, read as text) and its cuDNN and NCCL wheels; None without torch."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")  # finds the package; imports nothing of it
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None
    try:
        fields = _version_py_fields((Path(spec.origin).parent / "version.py").read_text(encoding="utf-8"))
    except OSError:
        fields = {}
    wheels = package_versions((*CUDNN_WHEELS, *NCCL_WHEELS))
    return {"cuda": fields.get("cuda"), "hip": fields.get("hip"), "git_version": fields.get("git_version"),
            "cudnn": next((wheels[w] for w in CUDNN_WHEELS if w in wheels), None) or conda_version("cudnn"),
            "nccl": next((wheels[w] for w in NCCL_WHEELS if w in wheels), None) or conda_version("nccl")}


def conda_version(name: str, prefix: Path | None = None) -> str | None:
    """A conda package's version from the environment's conda-meta/NAME-VERSION-BUILD.json (conda's torch takes
    cuDNN and NCCL from conda packages, not from pip wheels); None outside conda or where it is not installed."""
    meta = (prefix or Path(sys.prefix)) / "conda-meta"
    for path in sorted(meta.glob(f"{name}-[0-9]*.json")) if meta.is_dir() else []:
        try:
            package, reason = checked(path.read_bytes(), _CondaPackage)
        except OSError:
            continue
        if reason is None and package["name"] == name:
            return package["version"]
    return None


def _os_name() -> str:
    try:
        release = platform.freedesktop_os_release()
        return str(release.get("PRETTY_NAME") or release.get("NAME") or platform.system())
    except OSError:
        return platform.platform(terse=True)


def _cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def host_facts() -> HostFacts:
    from tuitrain.hardware.host import memory_total_used

    total, _ = memory_total_used()
    return {"name": socket.gethostname(), "os": _os_name(), "kernel": platform.release(),
            "arch": platform.machine(), "cpu_model": _cpu_model(), "cpu_count": os.cpu_count(),
            "memory_total": int(total // MIB) if isinstance(total, int) else None}


def gpu_facts(snapshot: Snapshot, indices: Iterable[int]) -> GpuFacts:
    """The driver and the GPUs `indices` names (NVML indices) of one `tuitrain.hardware.sampler.Snapshot`."""
    from tuitrain.hardware.na import NA

    discovery = snapshot.discovery
    wanted = set(indices)
    devices: list[GpuDevice] = [
        {"index": g.index, "name": None if g.name is NA else str(g.name),
         "memory_total": int(g.memory_total // MIB) if isinstance(g.memory_total, int) else None}
        for g in snapshot.gpus if g.index in wanted]
    driver = discovery.driver_version
    note = None if discovery.available else (discovery.reason or "NVML unavailable")
    return {"driver": None if driver is NA or not driver else str(driver), "devices": devices, "note": note}


def profile_seed(profile: Mapping[str, Any]) -> int | None:
    from tuitrain.profile.schema import SCHEMA

    run = profile.get("run")
    seed = run.get("seed") if isinstance(run, Mapping) else None
    return seed if isinstance(seed, int) else SCHEMA["run"]["seed"].default  # type: ignore[union-attr]


def data_paths(profile: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(profile key, path) of each local data file the frozen profile names."""
    out = []
    for section, key in DATA_KEYS:
        table = profile.get(section)
        value = table.get(key) if isinstance(table, Mapping) else None
        if isinstance(value, str) and value:
            out.append((f"{section}.{key}", value))
    return out


# ---------------------------------------------------------------------------------------------- file hashes
def hashes_path() -> Path:
    from tuitrain.profile.training_args import cache_dir

    return cache_dir() / HASHES_FILE


def _read_hashes(path: Path) -> dict[str, FileHash]:
    """The hash cache, or none where it cannot be read or does not check (its files are hashed again)."""
    try:
        hashes, reason = checked(path.read_bytes(), dict[str, FileHash])
    except OSError:
        return {}
    return {} if reason else dict(hashes)


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def file_fact(key: str, path: str, cache: Path | None = None, hash_now: bool = True) -> DataFact:
    """A data file's size and sha256: the cached hash when its path, size and mtime are those hashed; else hashed now
    (and cached) when `hash_now`, else null. A folder or a missing file says so instead."""
    fact: DataFact = {"key": key, "path": path, "size": None, "sha256": None}
    target = Path(path).expanduser()
    try:
        info = target.stat()
    except OSError as exc:
        return {**fact, "error": exc.strerror or str(exc)}
    if not target.is_file():
        return {**fact, "error": "a folder, not hashed"}
    fact["size"] = info.st_size
    cache = cache if cache is not None else hashes_path()
    known = _read_hashes(cache).get(str(target.resolve()))
    if known is not None and (known["size"], known["mtime_ns"]) == (info.st_size, info.st_mtime_ns):
        return {**fact, "sha256": known["sha256"]}
    if not hash_now:
        return fact
    try:
        digest = sha256_of(target)
    except OSError as exc:
        return {**fact, "error": exc.strerror or str(exc)}
    _remember(cache, str(target.resolve()), {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "sha256": digest})
    return {**fact, "sha256": digest}


def _remember(cache: Path, path: str, entry: FileHash) -> None:
    from tuitrain.atomic import write_text_atomic

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        known = _read_hashes(cache)
        known[path] = entry
        write_text_atomic(cache, json.dumps(known, indent=0, sort_keys=True) + "\n")
    except OSError:
        pass  # a read-only home: hashed again next time


# ---------------------------------------------------------------------------------------------- git
def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=GIT_TIMEOUT, env=env)
    except (OSError, subprocess.SubprocessError):
        return None


def _text(result: subprocess.CompletedProcess[bytes] | None) -> str | None:
    if result is None or result.returncode != 0:
        return None
    return result.stdout.decode("utf-8", "replace").strip() or None


def git_facts(folder: Path, role: str = "workdir") -> tuple[CodeFact, bytes] | None:
    """The commit, branch and dirtiness of the repository holding `folder`, and its diff against HEAD (cut at
    DIFF_LIMIT; its `diff_file` is for the caller to name); None when it is no repository or git cannot be run."""
    root = _text(_git(folder, "rev-parse", "--show-toplevel"))
    if root is None:
        return None
    status = _git(folder, "status", "--porcelain=v1", "--untracked-files=normal")
    lines = status.stdout.decode("utf-8", "replace").splitlines() if status is not None and status.returncode == 0 \
        else []
    untracked = [line[3:] for line in lines if line.startswith("??")]
    commit = _text(_git(folder, "rev-parse", "--verify", "-q", "HEAD"))
    diff = b""
    if commit and len(lines) > len(untracked):
        found = _git(folder, "diff", "HEAD", "--no-color", "--no-ext-diff")
        diff = found.stdout if found is not None and found.returncode == 0 else b""
    facts: CodeFact = {"role": role, "folder": str(folder), "root": root, "commit": commit,
                       "branch": _text(_git(folder, "symbolic-ref", "--short", "-q", "HEAD")),
                       "dirty": bool(lines) if status is not None and status.returncode == 0 else None,
                       "changed": len(lines) - len(untracked), "untracked": untracked[:UNTRACKED_LIMIT],
                       "diff_bytes": len(diff), "diff_sha256": hashlib.sha256(diff).hexdigest() if diff else None,
                       "diff_truncated": len(diff) > DIFF_LIMIT, "diff_file": None}
    return facts, diff[:DIFF_LIMIT]


def code_folders(record: RunRecord, profile: Mapping[str, Any]) -> list[tuple[str, Path]]:
    """(role, folder) whose git state the manifest keeps: a script's folder, then the run's working folder."""
    out: list[tuple[str, Path]] = []
    script = profile.get("script")
    if isinstance(script, Mapping) and isinstance(script.get("path"), str) and script["path"]:
        out.append(("script", Path(script["path"]).expanduser().parent))
    cwd = Fields(record).cwd
    if cwd:
        out.append(("workdir", Path(cwd)))
    return out


# ---------------------------------------------------------------------------------------------- the manifest
def read_frozen_profile(paths: RunPaths) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(paths.profile.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def base_manifest(record: RunRecord, profile: Mapping[str, Any], machine_rank: int,
                  cache: Path | None = None) -> tuple[Manifest, list[bytes]]:
    """Everything but the GPUs, with data hashes only where cached (`hash_data` adds the rest); the dirty diffs."""
    manifest: Manifest = {
        "format": FORMAT, "machine_rank": machine_rank, "run_id": Fields(record).record_id, "written": time.time(),
        "python": python_facts(), "packages": package_versions(), "torch_build": torch_build(),
        "host": host_facts(), "gpus": None, "seed": profile_seed(profile),
        "data": [file_fact(key, path, cache, hash_now=False) for key, path in data_paths(profile)],
        "code": []}
    diffs: list[bytes] = []
    roots: set[str] = set()
    for role, folder in code_folders(record, profile):
        found = git_facts(folder, role)
        if found is None or found[0]["root"] in roots:
            continue
        facts, diff = found
        roots.add(facts["root"])
        facts["diff_file"] = RunPaths(Path()).machine_git_diff(machine_rank, len(diffs)).name if diff else None
        manifest["code"].append(facts)
        diffs.append(diff)
    return manifest, diffs


def hash_data(manifest: Manifest, cache: Path | None = None) -> bool:
    """Hash the data files not yet hashed; True if any was."""
    changed = False
    for i, fact in enumerate(manifest["data"]):
        if fact["sha256"] is None and "error" not in fact:
            manifest["data"][i] = file_fact(fact["key"], fact["path"], cache)
            changed = True
    return changed


def write_manifest(paths: RunPaths, manifest: Manifest, diffs: Iterable[bytes] = ()) -> None:
    from tuitrain.atomic import write_text_atomic

    rank = manifest["machine_rank"]
    paths.machines.mkdir(exist_ok=True)
    for i, diff in enumerate(diffs):
        if diff:
            write_text_atomic(paths.machine_git_diff(rank, i), diff.decode("utf-8", "replace"))
    write_text_atomic(paths.machine_manifest(rank),
                      json.dumps({**manifest, "written": time.time()}, indent=1, sort_keys=False) + "\n")


class ManifestWriter:
    """Writes this machine's manifest in a daemon thread, niced: the cheap facts and the GPUs of the supervisor's first
    sample (`offer`) first, then again once uncached data files are hashed. `finish` waits for it (bounded)."""

    def __init__(self, paths: RunPaths, record: RunRecord, machine_rank: int = 0,
                 log: Callable[[str], None] = print, cache: Path | None = None,
                 gpu_wait: float = GPU_WAIT_SECONDS) -> None:
        self.paths = paths
        self.record = record.copy()
        self.machine_rank = machine_rank
        self.log = log
        self.cache = cache
        self.gpu_wait = gpu_wait
        self._snapshot: Snapshot | None = None
        self._sampled = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, expect_sample: bool = True) -> None:
        if not expect_sample:
            self._sampled.set()
        self._thread = threading.Thread(target=self._run, name="run-manifest", daemon=True)
        self._thread.start()

    def offer(self, snapshot: Snapshot) -> None:
        """A GPU sample of this machine (the supervisor's sampler; only the first one is used)."""
        if self._snapshot is None:
            self._snapshot = snapshot
            self._sampled.set()

    def finish(self, timeout: float = FINISH_SECONDS) -> None:
        self._sampled.set()  # no more waiting for a sample
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self.log(f"the manifest is still being written after {timeout:.0f} s (a large data file?)")

    def _run(self) -> None:
        try:
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)  # this thread only, on Linux
            except (OSError, AttributeError):
                pass
            profile = read_frozen_profile(self.paths)
            manifest, diffs = base_manifest(self.record, profile, self.machine_rank, self.cache)
            self._sampled.wait(self.gpu_wait)
            manifest["gpus"] = self._gpus()
            write_manifest(self.paths, manifest, diffs)
            if hash_data(manifest, self.cache):
                write_manifest(self.paths, manifest)
        except Exception as exc:  # noqa: BLE001 — a manifest is a record of the run, never a reason to end it
            self.log(f"could not write this machine's manifest: {type(exc).__name__}: {exc}")

    def _gpus(self) -> GpuFacts | None:
        snapshot = self._snapshot
        if snapshot is None:
            return None
        from tuitrain.runs.keeper.samples import run_gpu_indices

        return gpu_facts(snapshot, run_gpu_indices(self.record, snapshot, Fields(self.record).record_id or ""))


# ---------------------------------------------------------------------------------------------- reading
def _files(root: Path) -> list[Path]:
    """This run's manifests: its machines/ folder, and a Slurm node's own folder (nodes/machine-M/machines/)."""
    return sorted(p for node in RunPaths(root).nodes().values() for p in node.machines.glob("machine-*-manifest.json"))


def scan_manifests(root: Path) -> tuple[dict[int, Manifest], dict[int, str]]:
    """(machine rank → its manifest, for every machine of the run that wrote one that checks; machine rank → why its
    manifest cannot be used, in one line ("PATH: host.cpu_count: '64' is not a whole number"), for every machine whose
    file is there but damaged: no file at all is a run from before manifests, or a machine that never started)."""
    out: dict[int, Manifest] = {}
    damaged: dict[int, str] = {}
    for path in _files(root):
        try:
            manifest, reason = checked(path.read_bytes(), Manifest)
        except FileNotFoundError:
            continue
        except OSError as exc:
            manifest, reason = None, f"unreadable ({exc.strerror or exc})"
        if reason is None:
            out.setdefault(manifest["machine_rank"], manifest)
        else:
            damaged.setdefault(RunPaths.machine_of(path), f"{path}: {reason}")
    return out, {rank: why for rank, why in damaged.items() if rank not in out}
