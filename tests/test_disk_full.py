"""A full disk is named in one line wherever a run meets it (`rundir.disk_space`): here its record and the words a
log or an error holds; a real save on a full disk is tests/test_lifecycle.py's."""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path

from conftest import small_tmpfs
from tuitrain.rundir.disk_space import disk_full, exception_text, names_full_disk
from tuitrain.rundir.layout import RunPaths
from tuitrain.rundir.record import new_record, record_end, reserve_space, write_record


def fill(folder: Path) -> None:
    """Write until the filesystem says ENOSPC."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_record_written_on_a_full_disk_says_the_disk_is_full(tmp_path: Path) -> None:
    """The run failed for a reason of its own words; its end was written only by giving up the space reserve: the
    record says that disk is full too."""
    with small_tmpfs(tmp_path / "disk", "1m") as mount:
        paths = RunPaths(mount / "20260101-000000-demo")
        paths.root.mkdir()
        write_record(paths, new_record(paths.id, "demo", status="running"))
        reserve_space(paths)
        fill(mount)
        record_end(paths, status="failed", ended=time.time(), error="rank 0 (pid 7) exited with code 1")
        error = json.loads(paths.record.read_text())["error"]
    assert error.startswith("rank 0 (pid 7) exited with code 1 — the disk holding ")
    assert f"{paths.root} is full (" in error and names_full_disk(error)


def test_a_record_that_already_names_the_full_disk_says_it_once(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "disk", "1m") as mount:
        paths = RunPaths(mount / "20260101-000000-demo")
        paths.root.mkdir()
        write_record(paths, new_record(paths.id, "demo", status="running"))
        reserve_space(paths)
        fill(mount)
        said = disk_full([mount])
        assert said is not None
        record_end(paths, status="failed", ended=time.time(), error=f"checkpoint-8 was not saved: {said}")
        error = json.loads(paths.record.read_text())["error"]
    assert error.count("is full") == 1


def test_the_systems_words_name_a_full_disk_once_space_is_back(tmp_path: Path) -> None:
    roomy = [tmp_path]
    assert disk_full(roomy, "RuntimeError: unexpected pos 9664 vs 9556") is None
    assert disk_full(roomy, "OSError: [Errno 28] No space left on device: '/x/out/checkpoint-8/optimizer.pt'") == \
        "a disk was full (No space left on device)"
    assert disk_full(roomy, 'SafetensorError: Error while serializing: IoError(Os { code: 122, kind: QuotaExceeded, '
                            'message: "Disk quota exceeded" })') == "a disk was full (Disk quota exceeded)"
    assert names_full_disk("rank 0 failed — a disk was full (No space left on device)")


def test_an_exception_raised_while_handling_a_full_disk_keeps_its_words() -> None:
    """torch's writer raises "unexpected pos" while its own write failure is handled: the chain holds the words."""
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 90432 vs 90320")  # noqa: B904
    except RuntimeError as exc:
        caught = exc
    assert "No space left on device" in exception_text(caught)
