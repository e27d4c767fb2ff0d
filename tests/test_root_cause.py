"""What torch's elastic agent says of a failed run, read from the launcher's log (runs.exits.root_cause): the
rank it saw fail first, and the exit code of every rank it lists. A rank killed by a signal writes no record
of its own, so its code comes from here."""

from __future__ import annotations

from pathlib import Path

from tuitrain.runs.exits import root_cause

REPORT = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
tuitrain.engine FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-24_20:56:18
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 13021)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-24_20:56:18
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 13022)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 13022
============================================================
"""


def test_the_first_failure_and_every_listed_exit_code(tmp_path: Path) -> None:
    log = tmp_path / "launcher.log"
    log.write_text("[tuitrain supervisor 20:56:10] starting: ...\n" + REPORT)
    cause = root_cause(log)
    assert cause is not None
    assert (cause.rank, cause.exit_code, cause.pid) == (1, -9, 13022)
    assert cause.exit_codes == {0: 1, 1: -9}


def test_a_report_with_only_a_root_cause(tmp_path: Path) -> None:
    log = tmp_path / "launcher.log"
    log.write_text(REPORT[REPORT.index("Root Cause"):])
    cause = root_cause(log)
    assert cause is not None and cause.rank == 1 and cause.exit_codes == {1: -9}
