"""The guide's table of a profile's sections (docs/guide/reference.md; the README's until issue 38) names every key
each section takes, as the schema has them (issue 34, item 6: `[run] queue` was missing; so were `[data]`'s sizes of
a generated set, `[hardware] min_free_memory` and three of `[distributed]`'s accelerate keys)."""

from __future__ import annotations

import re
from pathlib import Path

from tuitrain.profile.schema import SCHEMA

REFERENCE = Path(__file__).parent.parent / "docs" / "guide" / "reference.md"


def test_every_key_of_a_section_is_in_its_row_of_the_readme():
    text = REFERENCE.read_text(encoding="utf-8")
    missing = []
    for section, keys in SCHEMA.items():
        if "." in section or not isinstance(keys, dict):
            continue
        found = re.search(rf"^\| `\[{re.escape(section)}\]` \| (.*) \|$", text, re.M)
        assert found, f"the guide's reference has no row for [{section}]"
        row = found.group(1)
        for key in keys:
            named = (f"`{key}`", f"`{key} =", f"`[{section}.{key}]`", f"`[[{section}.{key}]]`")
            if section != "training" and not any(form in row for form in named):
                missing.append(f"{section}.{key}")
    assert missing == [], f"keys the guide's profile table does not name: {missing}"
