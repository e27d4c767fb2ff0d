"""The densities docs/architecture.md §4.5 records, over tuitrain/ (tests excluded): lines, `.get("` reads (all, and
those mypy checks: on a TypedDict, through scripts/mypy_typed_get.py), and `Any`, each per 1,000 lines.

    .venv/bin/python scripts/key_reads.py      # about a minute: one mypy pass over the tree, no cache
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    files = sorted((ROOT / "tuitrain").rglob("*.py"))
    texts = [file.read_text(encoding="utf-8") for file in files]
    lines = sum(text.count("\n") for text in texts)
    gets = sum(text.count('.get("') for text in texts)
    anys = sum(len(re.findall(r"\bAny\b", text)) for text in texts)
    with tempfile.TemporaryDirectory() as folder:
        tally = Path(folder) / "tally"
        tally.touch()
        done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, "tuitrain"],
                              cwd=ROOT, env={**os.environ, "TUITRAIN_GET_TALLY": str(tally)}, capture_output=True,
                              text=True)
        calls = Counter(entry.rsplit(":", 1)[0] for entry in set(tally.read_text(encoding="utf-8").split()))
    if done.returncode != 0:
        print(done.stdout[-2000:], file=sys.stderr)
        return 1
    # a line's `.get("` reads that mypy checked: at most the checked calls the plugin saw on that line
    checked = sum(min(line.count('.get("'), calls[f"{file.relative_to(ROOT)}:{number}"])
                  for file, text in zip(files, texts, strict=True) for number, line in enumerate(text.splitlines(), 1))
    per = 1000 / lines
    print(f"lines {lines:,}\n.get(\" {gets} ({gets * per:.1f}/k), mypy-checked {checked}, unchecked {gets - checked} "
          f"({(gets - checked) * per:.1f}/k)\nAny {anys} ({anys * per:.1f}/k)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
