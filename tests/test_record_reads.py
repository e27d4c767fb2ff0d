"""No module outside `tuitrain/rundir/` reads run.json by key (issue 36, item 2): the record's keys are read in
`rundir/` (`record.py`, `run.py`), which checks them when read; everyone else asks it.

The rule, as this test checks it: a subscript `X["key"]` or a call `X.get("key", ...)` whose key is one `RunRecord`
declares and whose `X` is a name or attribute ending in `record` (`record`, `self.record`, `node_record`, ...; not
`rank_record`: a rank's own file, ranks/rank-N.json, read through `rundir.ranks`). A
record passed on under another name escapes it; no other dict is caught by it. The reads not yet moved are counted
per module below: a module may only go down (then lower its count here), no module may start, and the list is to
reach empty. Run this file's `__main__` to print the counts as they are."""

from __future__ import annotations

import ast
import typing
from collections import Counter
from pathlib import Path

from tuitrain.rundir.record import RunRecord

ROOT = Path(__file__).resolve().parent.parent / "tuitrain"
KEYS = frozenset(typing.get_type_hints(RunRecord))
NOT_YET_MOVED = {  # 2026-11-28: 214 reads in 45 modules; 2026-12-02: 197, then 5 once every reader asked
    # `rundir.run.Run` / `Fields`. What is left: `effective_status` returns the record's own `Status` (a Run's status
    # may be `unreadable`); `view/attempts.py` reads summaries and another workstation's rows too, unchecked, so it
    # takes any mapping and tests each value's kind
    "tuitrain/runs/liveness.py": 1,
    "tuitrain/runs/view/attempts.py": 4,
}


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
    caught = ast.parse('record["status"]; self.record.get("pids"); node_record.get("started", 0)')
    missed = ast.parse('summary["status"]; record["progress"]; record.get(key); entry.record; rank_record["started"]')
    assert keyed_reads(caught) == 3 and keyed_reads(missed) == 0


def test_no_module_outside_rundir_reads_more_of_run_json_by_key_than_it_did() -> None:
    counts = reads_outside_rundir()
    grown = {m: (n, NOT_YET_MOVED.get(m, 0)) for m, n in counts.items() if n > NOT_YET_MOVED.get(m, 0)}
    assert not grown, ("these modules read run.json by key (now, allowed): ask `tuitrain.rundir` (run.py, record.py) "
                       f"for what they need instead: {grown}")
    stale = {m: (counts.get(m, 0), n) for m, n in NOT_YET_MOVED.items() if counts.get(m, 0) < n}
    assert not stale, f"fewer keyed reads than counted (now, counted): lower NOT_YET_MOVED here: {stale}"


if __name__ == "__main__":
    for module, count in sorted(reads_outside_rundir().items()):
        print(f'    "{module}": {count},')
