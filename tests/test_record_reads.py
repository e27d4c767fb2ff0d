"""No module outside `tuitrain/rundir/` reads run.json by key (issue 36, item 2): the record's keys are read in
`rundir/` (`record.py`, `run.py`), which checks them when read; everyone else asks it.

The rule, as this test checks it: a subscript `X["key"]` or a call `X.get("key", ...)` whose key is one `RunRecord`
declares and whose `X` is a name or attribute ending in `record` (`record`, `self.record`, `node_record`, ...; not
`rank_record`: a rank's own file, ranks/rank-N.json, read through `rundir.ranks`), or a call of one
(`read_record(paths)`, `load_record(paths)`). A record passed on under another name escapes it; no other dict is
caught by it. Run this file's `__main__` to print
the reads it finds. (It counted 214 in 45 modules on 2026-11-28, and has held at none since 2026-12-02.)"""

from __future__ import annotations

import ast
import typing
from collections import Counter
from pathlib import Path

from tuitrain.rundir.record import RunRecord

ROOT = Path(__file__).resolve().parent.parent / "tuitrain"
KEYS = frozenset(typing.get_type_hints(RunRecord))


def keyed_reads(tree: ast.AST) -> int:
    """How many times `tree` reads a record by one of RunRecord's keys."""
    found = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            value, key = node.value, node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            value, key = node.func.value, node.args[0].value
        else:
            continue
        value = value.func if isinstance(value, ast.Call) else value
        name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else ""
        found += key in KEYS and name.lower().endswith("record") and not name.lower().endswith("rank_record")
    return found


def reads_outside_rundir() -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).parts[0] != "rundir":
            counts[path.relative_to(ROOT.parent).as_posix()] += keyed_reads(ast.parse(path.read_text(encoding="utf-8")))
    return +counts


def test_the_rule_sees_a_keyed_read_and_nothing_else() -> None:
    caught = ast.parse('record["status"]; self.record.get("pids"); node_record.get("started", 0); '
                       'read_record(paths).get("slurm"); catalog.load_record(p)["queue"]')
    missed = ast.parse('summary["status"]; record["progress"]; record.get(key); entry.record; rank_record["started"]; '
                       'read_rank_record(p)["started"]; Fields(read_record(paths)).slurm')
    assert keyed_reads(caught) == 5 and keyed_reads(missed) == 0


def test_no_module_outside_rundir_reads_run_json_by_key() -> None:
    found = reads_outside_rundir()
    assert not found, f"these modules read run.json by key: ask `tuitrain.rundir.run` (Run, Fields) instead: {dict(found)}"


if __name__ == "__main__":
    for module, count in sorted(reads_outside_rundir().items()):
        print(f'    "{module}": {count},')
