"""The README's table of a profile's sections names every key each section takes, as the schema has them (issue 34,
item 6: `[run] queue` was missing; so were `[data]`'s sizes of a generated set, `[hardware] min_free_memory` and
three of `[distributed]`'s accelerate keys)."""

from __future__ import annotations

import re
from pathlib import Path

from tuitrain.profile.schema import SCHEMA

README = Path(__file__).parent.parent / "README.md"


def test_every_key_of_a_section_is_in_its_row_of_the_readme():
    text = README.read_text(encoding="utf-8")
    missing = []
    for section, keys in SCHEMA.items():
        if "." in section or not isinstance(keys, dict):
            continue
        found = re.search(rf"^\| `\[{re.escape(section)}\]` \| (.*) \|$", text, re.M)
        assert found, f"the README has no row for [{section}]"
        row = found.group(1)
        for key in keys:
            named = (f"`{key}`", f"`{key} =", f"`[{section}.{key}]`", f"`[[{section}.{key}]]`")
            if section != "training" and not any(form in row for form in named):
                missing.append(f"{section}.{key}")
    assert missing == [], f"keys the README's profile table does not name: {missing}"
