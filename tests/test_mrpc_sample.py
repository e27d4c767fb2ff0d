"""The MRPC sample the checkout carries (tests/data/mrpc) is what its README says it is: the rows, labels and
checksums of its table, the header the tests read, and the licence beside it. The README is the sample's notice
of changes under its licence, so a sample cut again without a new notice fails here."""

from __future__ import annotations

import csv
import hashlib
import re
from collections import Counter

from conftest import MRPC


def stated() -> dict[str, tuple[int, int, int, str]]:
    """The README's table: file -> (rows, label 1, label 0, sha256)."""
    table = re.findall(r"^\| (\S+\.csv) \| (\d+) \| (\d+) \| (\d+) \| ([0-9a-f]{64}) \|$",
                       (MRPC / "README.md").read_text(encoding="utf-8"), re.MULTILINE)
    return {name: (int(rows), int(ones), int(zeros), digest) for name, rows, ones, zeros, digest in table}


def test_the_sample_is_what_its_readme_states():
    files = sorted(p.name for p in MRPC.glob("*.csv"))
    assert sorted(stated()) == files == ["train.csv", "validation.csv"]
    for name, (rows, ones, zeros, digest) in stated().items():
        raw = (MRPC / name).read_bytes()
        with open(MRPC / name, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            labels = Counter(row["label"] for row in reader)
            assert reader.fieldnames == ["sentence1", "sentence2", "label"]
        assert (sum(labels.values()), labels["1"], labels["0"]) == (rows, ones, zeros), name
        assert hashlib.sha256(raw).hexdigest() == digest, name
    assert "Copyright © Microsoft Corporation" in (MRPC / "LICENSE-MSR-SSLA.txt").read_text(encoding="utf-8")
