"""The layers of ../shared/DESIGN.md, checked (an import-linter style contract, by `ast`).

Every `import` and `from ... import` under tuitrain/ counts, at module level, inside functions and
under `if TYPE_CHECKING:` alike (a type-only import is still an arrow between layers). A layer is
the first folder under tuitrain/ (rundir, profile, hardware, launch, remote, runs, slurm, backends, engine, script,
tui, cli); the small
top-level modules (atomic, humanize, installed, torch_build, yaml_text, user_config, errors) are helpers that
import no layer (`errors`, the root of every refusal, is the one helper the others may import).
Starting a process (`python -m tuitrain.engine`, `-m tuitrain.runs.keeper.supervise`) is not an import.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

PACKAGE = Path(__file__).resolve().parents[1] / "tuitrain"

# package: tuitrain/__init__.py
HELPERS = frozenset({"atomic", "humanize", "installed", "torch_build", "yaml_text", "user_config", "errors", "package"})
LAYERS = ("rundir", "profile", "hardware", "launch", "remote", "notify", "runs", "slurm", "backends", "engine", "script", "tui", "cli")

# layer -> the other layers (and helpers) it may import; its own modules always.
ALLOWED: dict[str, frozenset[str]] = {
    # the run directory's contract (layout, record, events, checkpoints, ...): what the engine's ranks write and every
    # other layer reads; it imports no layer
    "rundir": frozenset({"atomic", "errors"}),
    "profile": HELPERS,
    # profile for `Problem`, the one vocabulary of findings (hardware/preflight.py says its checks in it); rundir for
    # json_shape, which checks another machine's GPU report as every reader checks a file another host wrote
    "hardware": HELPERS | {"profile", "rundir"},
    "launch": HELPERS | {"rundir", "profile", "hardware"},
    # remote: the SSH transport to other machines (standard library only), below runs' supervisor
    "remote": HELPERS,
    # notify: word of a run's end (webhook, command) from its record as rundir reads it, sent by the supervisor;
    # its findings in profile's vocabulary
    "notify": HELPERS | {"rundir", "profile"},
    "runs": HELPERS | {"rundir", "profile", "launch", "hardware", "remote", "notify"},
    # the scheduler: sbatch/squeue/sacct/scancel around the ordinary planner and supervisor
    "slurm": HELPERS | {"rundir", "profile", "hardware", "launch", "remote", "runs"},
    # what each rank loads: the run directory's contract, no psutil-heavy watching, no planning, no hardware
    "engine": frozenset({"atomic", "errors", "torch_build", "profile", "rundir"}),
    # script mode's rank side (a user's own script): what the engine's ranks get, and the engine's callbacks
    "script": frozenset({"atomic", "errors", "rundir", "engine"}),
    # how a run is carried (this machine, SSH machines, a Slurm job): one interface over the three, chosen once; and
    # one start for every front end, whose first check is that word of the run's end can be sent (notify)
    "backends": HELPERS | {"rundir", "profile", "hardware", "launch", "remote", "notify", "runs", "slurm"},
    # slurm: the app acts on a Slurm run as the CLI does (its stop cancels the job when it must)
    "tui": HELPERS | {"rundir", "profile", "hardware", "launch", "remote", "runs", "slurm", "backends", "notify"},
    # tui only to open the app, and only inside a function (`tuitrain` with no command): see CLI_TUI
    "cli": HELPERS | {"rundir", "profile", "hardware", "launch", "remote", "notify", "runs", "slurm", "backends", "tui"},
    "main": frozenset({"cli"}),  # tuitrain/__main__.py
}
CLI_TUI = frozenset({"tuitrain.tui.app"})
# `tuitrain.report` / `tuitrain.saved` at the package's top, for scripts: they load script mode's API when called
PACKAGE_SCRIPT = frozenset({"tuitrain.script.api"})

# Imports that break the picture today, each with its reason and what removes it. The test fails
# when an entry is no longer needed, so the list only shrinks.
EXCEPTIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    target: str  # the module imported (a `from pkg import sub` names pkg.sub when that is a module)
    names: tuple[str, ...]  # what `from ... import` took out of it
    lazy: bool  # inside a function
    where: str  # path:line

    def __str__(self) -> str:
        return f"{self.where}: {self.importer} -> {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    base = PACKAGE.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    return "main" if parts[1] == "__main__" else parts[1]  # a layer's folder, or a helper's own name


def _functions(tree: ast.AST) -> set[int]:
    """ids of the import nodes that sit inside a function."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return inside


def imports() -> tuple[Import, ...]:
    return _imports()


@functools.cache
def _imports() -> tuple[Import, ...]:
    return tuple(_walk())


def _walk() -> Iterator[Import]:
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lazy = _functions(tree)
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(tree):
            where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "tuitrain":
                        yield Import(importer, alias.name, (), id(node) in lazy, where)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module.split(".")[0] != "tuitrain":
                    continue
                names = tuple(a.name for a in node.names)
                subs = [f"{module}.{n}" for n in names if is_module(f"{module}.{n}")]
                for target in subs or [module]:
                    yield Import(importer, target, names, id(node) in lazy, where)


def cross_layer() -> list[Import]:
    return [i for i in imports() if layer_of(i.importer) != layer_of(i.target)]


def test_every_module_has_a_layer() -> None:
    known = set(LAYERS) | HELPERS | {"main"}
    assert sorted({layer_of(module_name(p)) for p in PACKAGE.rglob("*.py")} - known) == []
    assert set(ALLOWED) == set(LAYERS) | {"main"}


def test_helpers_import_no_layer() -> None:
    assert [str(i) for i in cross_layer() if layer_of(i.importer) in HELPERS and i.target != "tuitrain.errors"
            and not (layer_of(i.importer) == "package" and i.target in PACKAGE_SCRIPT and i.lazy)] == []


def test_each_layer_imports_only_what_the_design_allows() -> None:
    broken = []
    for found in cross_layer():
        source, target = layer_of(found.importer), layer_of(found.target)
        if source in HELPERS or (found.importer, found.target) in EXCEPTIONS:
            continue
        if target not in ALLOWED[source]:
            broken.append(f"{found}  ({source} may not import {target})")
        elif source == "cli" and target == "tui" and not (found.target in CLI_TUI and found.lazy):
            broken.append(f"{found}  (the CLI opens the app only: tuitrain.tui.app, inside a function)")
    assert broken == []


def test_the_exceptions_are_all_still_needed() -> None:
    used = {(i.importer, i.target) for i in cross_layer()}
    assert [pair for pair in EXCEPTIONS if pair not in used] == []


def test_no_layer_imports_another_layers_private_names() -> None:
    private = [f"{i} ({', '.join(n for n in i.names if n.startswith('_') and not n.startswith('__'))})"
               for i in cross_layer()
               if any(n.startswith("_") and not n.startswith("__") for n in i.names)
               or any(p.startswith("_") and not p.startswith("__") for p in i.target.split("."))]
    assert private == []


def test_the_allowed_layers_form_no_cycle() -> None:
    """Read as a graph, the table above has an order: rundir, profile, hardware, launch, runs, then the
    engine beside tui and cli. (The CLI's lazy opening of the app is the one arrow between the
    front ends, and it runs one way.)"""
    order = ["main", "cli", "tui", "backends", "script", "engine", "slurm", "runs", "notify", "remote", "launch", "hardware",
             "profile", "rundir"]
    for source, allowed in ALLOWED.items():
        for target in allowed - HELPERS:
            assert order.index(source) < order.index(target), f"{source} -> {target} points up"


def _graph() -> dict[str, set[str]]:
    """module -> modules it loads: the target and the packages above it (their __init__ runs too)."""
    graph: dict[str, set[str]] = {module_name(p): set() for p in PACKAGE.rglob("*.py")}
    for found in imports():
        parts = found.target.split(".")
        for end in range(2, len(parts) + 1):
            graph[found.importer].add(".".join(parts[:end]))
    return graph


def _components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    out.append(component)
    return out


def test_no_import_cycle_crosses_layers() -> None:
    crossing = [sorted(c) for c in _components(_graph()) if len({layer_of(m) for m in c}) > 1]
    assert crossing == []


def _module_graph() -> dict[str, set[str]]:
    """module -> the modules it imports by name, without the arrows a package's __init__ adds by re-exporting its
    modules (importing `tuitrain.profile.load` runs `tuitrain/profile/__init__.py`, which imports `load` back:
    Python's own package pattern, not a circle between two modules)."""
    graph: dict[str, set[str]] = {module_name(p): set() for p in PACKAGE.rglob("*.py")}
    for found in imports():
        if found.target in graph:
            graph[found.importer].add(found.target)
    for module in graph:
        if PACKAGE.parent.joinpath(*module.split("."), "__init__.py").is_file():
            graph[module] = set()
    return graph


def test_no_two_modules_import_each_other_even_through_others() -> None:
    """No import circle anywhere (issue 25): a screen types the app by tui.app_api, the supervisor is chosen in
    runs.keeper.supervise, a log view and its filters share tui.line_source."""
    assert [sorted(c) for c in _components(_module_graph()) if len(c) > 1] == []


def test_a_cycle_across_layers_would_be_seen() -> None:
    graph = {"tuitrain.hardware.a": {"tuitrain.runs.b"}, "tuitrain.runs.b": {"tuitrain.hardware.a"}, "tuitrain.x": set()}
    assert sorted(map(sorted, _components(graph))) == [["tuitrain.hardware.a", "tuitrain.runs.b"], ["tuitrain.x"]]


def test_what_a_rank_loads_stays_out_of_planning_hardware_and_the_front_ends() -> None:
    """The modules `python -m tuitrain.engine` can load, transitively (lazy imports included)."""
    graph = _graph()
    seen, todo = set(), [m for m in graph if layer_of(m) == "engine"]
    while todo:
        module = todo.pop()
        if module not in seen and module in graph:
            seen.add(module)
            todo.extend(graph[module])
    assert sorted(m for m in seen if layer_of(m) in {"hardware", "launch", "tui", "cli"}) == []
