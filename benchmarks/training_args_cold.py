"""The first `tuitrain plan` after installing or upgrading transformers, against a warm cache.

    .venv/bin/python benchmarks/training_args_cold.py [--repeat 5] [--profile demo]

The TrainingArguments table is cached per transformers install (training_args.py). With an empty cache
folder, the first command used to wait for the probe (a child interpreter importing transformers: ~15 s
on a GPU box); now the snapshot shipped with tuitrain answers and the probe fills the cache in the
background. Each round, in a fresh subprocess, offline, the figures taking turns:

  python -c pass          the baseline every other figure is a ratio of (measured in the same round)
  plan, warm cache        the cache folder holds this install's table
  plan, empty cache       a new, empty cache folder (the first command after an install)
  plan, unwritable cache  XDG_CACHE_HOME=/dev/null/cache: nothing can be kept, every command is a first one
  plan, empty cache, snapshot of another version
                          as a user of another transformers version than the snapshot's (the issue's 5.17):
                          `tuitrain.cli.main(["plan", ...])` with the snapshot's version renamed in-process
  probe                   `python -m tuitrain.engine.training_args_probe` alone: what the first command
                          waited for before (and still waits for when the profile uses a key, choice or
                          model type that the snapshot lacks and the installed version is not the snapshot's)

and, after each empty-cache plan, the time until its background probe has written the table (it runs
niced; the next round starts only once it is done). Medians of --repeat rounds; wall and CPU seconds.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BIN, ROOT, QuietGate, Table, bench_env, machine_line, median, wall_and_cpu

sys.path.insert(0, str(ROOT))
from tuitrain.profile.training_args import LOCK_NAME, PROBE_MODULE, snapshot_table, transformers_version

# `tuitrain plan ...` as the console script runs it, with the shipped snapshot taken for another version's.
OTHER_VERSION = """
import sys
from tuitrain.profile import training_args
training_args.snapshot_table()["version"] = "0.0.0-other"
from tuitrain.cli import main
sys.exit(main(sys.argv[1:]))
"""


def background_done(cache: Path, limit: float) -> float | None:
    """Seconds until the table is in `cache` and no probe holds the lock (None: not within `limit`)."""
    start = time.monotonic()
    folder = cache / "tuitrain"
    while time.monotonic() - start < limit:
        if any(folder.glob("training-args-*.json")):
            fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return time.monotonic() - start
            except BlockingIOError:
                pass
            finally:
                os.close(fd)
        time.sleep(0.05)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", default="demo", help="profile to plan (a built-in name or a file)")
    parser.add_argument("--quiet-wait", type=float, default=10.0,
                        help="seconds to wait, before each round, for other processes to go quiet")
    parser.add_argument("--wait-budget", type=float, default=60.0, help="seconds of waiting for quiet in all")
    opts = parser.parse_args()

    version = transformers_version()
    if version is None:
        print("training_args_cold: transformers is not installed here: nothing to measure")
        return 0
    snapshot = snapshot_table()
    tool = str(BIN / "tuitrain")
    tmp = Path(tempfile.mkdtemp(prefix="tuitrain-bench-targs-"))
    gate = QuietGate(max_wait=opts.quiet_wait, budget=opts.wait_budget)
    work, runs, warm_cache = tmp / "work", tmp / "runs", tmp / "warm-cache"
    work.mkdir()
    plan = [tool, "plan", opts.profile, "--runs-dir", str(runs)]
    try:
        wall_and_cpu(plan, cwd=work, env=bench_env(XDG_CACHE_HOME=str(warm_cache)))  # fills the warm cache
        if background_done(warm_cache, 600) is None:
            raise RuntimeError("the background probe wrote no table within 600 s")
        names = ["python -c pass (baseline)", "plan, warm cache", "plan, empty cache", "plan, unwritable cache",
                 "probe (the wait before)", "plan, empty cache, snapshot of another version"]
        walls: dict[str, list[float]] = {n: [] for n in names}
        cpus: dict[str, list[float]] = {n: [] for n in names}
        filled: list[float] = []
        for n in range(opts.repeat):
            gate.wait()
            cold_cache = tmp / f"cold-cache-{n}"
            argvs = {
                names[0]: ([sys.executable, "-c", "pass"], bench_env()),
                names[1]: (plan, bench_env(XDG_CACHE_HOME=str(warm_cache))),
                names[2]: (plan, bench_env(XDG_CACHE_HOME=str(cold_cache))),
                names[3]: (plan, bench_env(XDG_CACHE_HOME=os.devnull + "/cache")),
                names[4]: ([sys.executable, "-m", PROBE_MODULE], bench_env(TRANSFORMERS_VERBOSITY="error")),
                names[5]: ([sys.executable, "-c", OTHER_VERSION, *plan[1:]],
                           bench_env(XDG_CACHE_HOME=str(tmp / f"other-cache-{n}"))),
            }
            for name, (argv, env) in argvs.items():
                start = time.monotonic()
                elapsed, cpu = wall_and_cpu(argv, cwd=work, env=env)
                walls[name].append(elapsed)
                cpus[name].append(cpu)
                if name in (names[2], names[5]):
                    done = background_done(Path(env["XDG_CACHE_HOME"]), 600)
                    if done is None:
                        raise RuntimeError("the background probe wrote no table within 600 s")
                    if name == names[2]:
                        filled.append(time.monotonic() - start)

        base = median(walls[names[0]])
        print(f"training_args_cold: median of {opts.repeat} rounds, each figure a fresh subprocess, offline")
        print(machine_line())
        print(f"transformers {version}; snapshot shipped: transformers "
              f"{snapshot.get('version') if snapshot else '(none)'}; profile: {opts.profile}")
        table = Table(["command", "wall (s)", "x baseline", "CPU (s)"])
        for name in names:
            w = median(walls[name])
            table.add([name, f"{w:.3f}", f"{w / base:.1f}", f"{median(cpus[name]):.3f}"])
        print(table.render())
        cold, warm = median(walls[names[2]]), median(walls[names[1]])
        probe = median(walls[names[4]])
        print(f"empty cache / warm cache: {cold / warm:.2f}x; before this change the first plan waited for the "
              f"probe: about warm + probe = {warm + probe:.2f} s ({(warm + probe) / warm:.0f}x warm)")
        print(f"the empty-cache plan's background probe had written the table {median(filled):.1f} s after the "
              f"plan started (median; niced, beside nothing else of ours)")
        print(gate.summary())
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
