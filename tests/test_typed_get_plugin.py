"""The mypy plugin the type check runs with (scripts/mypy_typed_get.py, pyproject's [tool.mypy] plugins): a `.get`
of a key a TypedDict does not declare is an error, as a subscript of one is in mypy itself. Without it, a misspelt
`record.get("exit_cod")` type-checks and reads None at run time."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent
SOURCE = '''from typing import TypedDict
class Rank(TypedDict, total=False):
    pid: int
def pid(rank: Rank) -> object:
    return rank.get("pid"), rank.get("exit_cod")
'''


def test_a_get_of_a_key_the_typeddict_does_not_declare_fails_the_type_check(tmp_path: Path) -> None:
    (tmp_path / "reads.py").write_text(SOURCE)
    out, _err, code = api.run([str(tmp_path / "reads.py"), "--config-file", str(ROOT / "pyproject.toml"),
                               "--cache-dir", str(tmp_path / "cache")])
    assert code == 1, out
    assert out.count("error:") == 1 and 'TypedDict "Rank" has no key "exit_cod"' in out and ":5:" in out, out
