"""What torch's elastic agent says of a failed run, read from the launcher's log (rundir.exits.root_cause): the
rank it saw fail first, and the exit code of every rank it lists. A rank killed by a signal writes no record
of its own, so its code comes from here."""

from __future__ import annotations

from pathlib import Path

from tuitrain.rundir.exits import RootCause, first_of_several, last_exception_line, root_cause

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


# Found dead at one look: torch's agent orders by whole seconds and breaks ties by rank, so it may name rank 0,
# whose gloo collective failed only because rank 1 had been killed (seen on a loaded CI machine).
TIE = RootCause(rank=0, exit_code=1, pid=13021, exit_codes={0: 1, 1: -9})


def test_of_several_dead_the_one_killed_from_outside_came_first() -> None:
    dead = {0: {"exit_code": 1}, 1: {"exit_code": None}}
    assert first_of_several(TIE, dead) == 1
    assert first_of_several(None, dead) == 1  # no word from torch: our records alone say it never got to say


def test_ranks_ended_by_the_teardown_do_not_count_as_killed_from_outside() -> None:
    cause = RootCause(rank=0, exit_code=1, pid=1, exit_codes={0: 1, 1: -9, 2: -15, 3: -15})
    dead = {0: {"exit_code": 1}, 1: {"exit_code": None}, 2: {"exit_code": None}, 3: {"exit_code": None}}
    assert first_of_several(cause, dead) == 1


def test_when_the_dead_cannot_be_told_apart_torch_has_the_word() -> None:
    both_killed = RootCause(rank=0, exit_code=-9, pid=1, exit_codes={0: -9, 1: -9})
    assert first_of_several(both_killed, {0: {"exit_code": None}, 1: {"exit_code": None}}) == 0
    both_raised = RootCause(rank=1, exit_code=1, pid=1, exit_codes={0: 1, 1: 1})
    assert first_of_several(both_raised, {0: {"exit_code": 1}, 1: {"exit_code": 1}}) == 1


# The end of a rank's log on an H100 (torch 2.11, tests/test_gpu_lane.py's NCCL stall), shortened.
NCCL_WATCHDOG = (Path(__file__).parent / "fixtures" / "nccl_watchdog_rank.log").read_text()


def test_a_rank_the_nccl_watchdog_ended_says_which_collective_timed_out():
    said = last_exception_line(NCCL_WATCHDOG)
    assert said == "NCCL's watchdog timed out all_reduce #2 after 10 s: a rank never joined it, or a GPU stalled"
    assert last_exception_line("Traceback …\nValueError: bad\n") == "ValueError: bad"
