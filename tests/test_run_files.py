"""Run directories as files on a shared machine: damaged records, modes, permissions, odd runs roots.

Each test works on a copy of the session's finished run (no new training launch)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import FAST, check_clean, cli

NOBODY = 65534
AS_ROOT = os.geteuid() == 0
# As root, "another user" is root without the right to pass over file permissions; the files are given to nobody.
NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def copy_run(finished_run: Path, runs: Path, name: str | None = None) -> Path:
    copy = runs / (name or finished_run.name)
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns("output"))
    return copy


@pytest.fixture
def damaged(finished_run, tmp_path) -> Path:
    """A good run and, beside it, a copy whose run.json is empty."""
    runs = tmp_path / "runs"
    copy_run(finished_run, runs)
    bad = copy_run(finished_run, runs, "20200101-000000-demo")
    (bad / "run.json").write_text("")
    return bad


# ------------------------------------------------------------------------------ damaged run.json
def test_an_empty_run_json_is_damaged_not_missing(damaged):
    runs = damaged.parent
    for command in ("status", "checkpoints"):
        text = check_clean(cli(command, damaged.name, runs_dir=runs), f"{damaged / 'run.json'} is damaged (empty file)")
        assert "no run" not in text and len(text.strip().splitlines()) == 1, text


@pytest.mark.parametrize("content, reason", [
    ('{"id": "x", "status": ', "not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"id": "x"}', "no status"),
    ('{"status": "finished", "created": ' + "1" * 5000 + "}", "not valid JSON: a number too long to read"),
])
def test_a_corrupt_run_json_says_what_is_wrong(damaged, content, reason):
    (damaged / "run.json").write_text(content)
    check_clean(cli("status", damaged.name, runs_dir=damaged.parent), f"{damaged / 'run.json'} is damaged ({reason}")


def test_runs_lists_a_damaged_run_as_unreadable(damaged, finished_run):
    runs = damaged.parent
    result = cli("runs", runs_dir=runs)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stdout + result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert set(lines) == {damaged.name, finished_run.name}, result.stdout
    assert "unreadable" in lines[damaged.name] and "finished" in lines[finished_run.name]
    listed = {r["id"]: r for r in json.loads(cli("runs", "--json", runs_dir=runs).stdout)}
    assert listed[damaged.name]["status"] == "unreadable"
    assert "empty file" in listed[damaged.name]["error"]
    assert listed[finished_run.name]["status"] == "finished"


def test_logs_of_a_damaged_run_are_still_shown(damaged):
    result = cli("logs", damaged.name, runs_dir=damaged.parent)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout.strip()
    followed = cli("logs", damaged.name, "--follow", runs_dir=damaged.parent, timeout=30)
    check_clean(followed, "is damaged (empty file)")
    assert followed.stdout == result.stdout


@pytest.mark.parametrize("content", ["", "[1, 2]", '"running"', '{"id": "x"}'])
def test_the_apps_runs_list_survives_a_damaged_run(damaged, finished_run, content):
    """The app lists a run with a damaged run.json as unreadable, and goes on listing the others."""
    from tuitrain.backends import settle_runs
    from tuitrain.runs.view.live import RunsWatcher

    (damaged / "run.json").write_text(content)
    rows, _ = RunsWatcher(damaged.parent, settle_runs).poll()
    assert {row.id: row.status for row in rows} == {finished_run.name: "finished", damaged.name: "unreadable"}


def test_opening_a_damaged_run_in_the_app_says_why_and_the_app_goes_on(damaged, tmp_path):
    import asyncio

    from tuitrain.hardware import Hardware
    from tuitrain.tui.app import TuitrainApp

    (damaged / "run.json").write_text("")
    app = TuitrainApp(damaged.parent, cwd=tmp_path, hardware=Hardware(), hardware_line="-")

    async def main():
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            home = app.screen
            app.open_run(damaged)
            await pilot.pause(0.2)
            assert app.screen is home
            assert any("damaged" in n.message for n in app._notifications), [n.message for n in app._notifications]

    asyncio.run(main())


# ------------------------------------------------------------------------------ run references and runs roots
def test_an_empty_run_reference_asks_for_a_run(damaged):
    for ref in ("", "  "):
        text = check_clean(cli("status", ref, runs_dir=damaged.parent), "give a run id")
        assert "ambiguous" not in text


def test_a_runs_root_that_is_a_file(tmp_path):
    blocker = tmp_path / "runs"
    blocker.write_text("")
    for argv in (["runs"], ["status", "latest"], ["run", "demo", "--detach"]):
        text = check_clean(cli(*argv, runs_dir=blocker), f"the runs root {blocker} is a file", "--runs-dir")
        assert "File exists" not in text and len(text.strip().splitlines()) == 1, text
    assert blocker.read_text() == ""


# ------------------------------------------------------------------------------ file modes
def umask_now() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_state_files_follow_the_umask(finished_run):
    expected = 0o666 & ~umask_now()
    files = ["run.json", "profile.toml", "accelerate.yaml", "training_args.json", "ranks/rank-0.json", "logs/launcher.log"]
    modes = {name: oct(stat.S_IMODE((finished_run / name).stat().st_mode)) for name in files}
    assert modes == {name: oct(expected) for name in files}


@pytest.mark.parametrize("mask", [0o002, 0o077])
def test_atomic_writes_follow_the_umask(tmp_path, mask):
    from tuitrain.atomic import write_json_atomic, write_text_atomic

    old = os.umask(mask)
    try:
        write_json_atomic(tmp_path / "a.json", {"a": 1})
        write_text_atomic(tmp_path / "b.txt", "b", mode=0o640)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_new_profile_follows_the_umask_and_a_saved_one_keeps_its_mode(tmp_path):
    from tuitrain.profile.save import save_profile

    data = {"run": {"name": "x"}}
    old = os.umask(0o002)
    try:
        save_profile(data, tmp_path / "new.toml")
        kept = tmp_path / "kept.toml"
        kept.write_text('[run]\nname = "y"\n')
        os.chmod(kept, 0o600)
        save_profile(data, kept)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.toml").stat().st_mode) == 0o664
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


# ------------------------------------------------------------------------------ permissions
@pytest.fixture
def shared_dir():
    """A folder whose modes are given back afterwards, so that it can be removed."""
    path = Path(tempfile.mkdtemp(prefix="tuitrain-shared-"))
    os.chmod(path, 0o755)
    yield path
    for sub in [path, *path.rglob("*")]:
        os.chmod(sub, 0o755)
    shutil.rmtree(path, ignore_errors=True)


def cli_as_other_user(*args: str, runs_dir: Path) -> subprocess.CompletedProcess[str]:
    """The CLI as a user who does not own the files made private (see `make_private`)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TUITRAIN_RUNS_DIR": str(runs_dir)}
    prefix = NO_OVERRIDE if AS_ROOT else []
    return subprocess.run([*prefix, sys.executable, "-m", "tuitrain", *args], capture_output=True, text=True,
                          env=env, cwd=runs_dir.parent, timeout=60)


def make_private(path: Path, mode: int) -> None:
    """`path` as another user's, with `mode`. Not being root, we cannot give it away: we keep
    for ourselves only what `mode` grants others."""
    if AS_ROOT:
        os.chown(path, NOBODY, NOBODY)
        os.chmod(path, mode)
    else:
        os.chmod(path, (mode & 0o7) * 0o111)


@pytest.fixture
def needs_setpriv():
    if AS_ROOT and not shutil.which("setpriv"):
        pytest.skip("as root, this needs setpriv (util-linux) to act as another user")


def test_a_run_another_user_made_unreadable(finished_run, shared_dir, needs_setpriv):
    runs = shared_dir / "runs"
    good = copy_run(finished_run, runs)
    private = copy_run(finished_run, runs, "20200101-000000-demo")
    for path in [runs, *runs.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    make_private(private / "run.json", 0o600)
    text = check_clean(cli_as_other_user("status", private.name, runs_dir=runs), f"{private / 'run.json'}", "permission denied")
    assert len(text.strip().splitlines()) == 1, text
    listed = cli_as_other_user("runs", runs_dir=runs)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stdout + listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert "unreadable" in lines[private.name] and "finished" in lines[good.name]


def test_a_runs_root_you_cannot_read_or_write(finished_run, shared_dir, needs_setpriv):
    runs = shared_dir / "runs"
    copy_run(finished_run, runs)
    make_private(runs, 0o700)
    text = check_clean(cli_as_other_user("runs", runs_dir=runs), str(runs), "permission denied")
    assert len(text.strip().splitlines()) == 1, text
    make_private(runs, 0o755)
    check_clean(cli_as_other_user("run", "demo", "--detach", runs_dir=runs), str(runs), "not writable", "--runs-dir")


def test_every_file_of_a_run_follows_the_umask(runs_dir):
    """Under a lab's umask 002 every file a run writes is group-writable 0664 (0644 would lock the
    group out of what it shares; 0600 would hide the run from everyone else)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TUITRAIN_RUNS_DIR": str(runs_dir)}
    result = subprocess.run([sys.executable, "-m", "tuitrain", "run", "demo", *FAST], capture_output=True, text=True,
                            env=env, cwd=runs_dir.parent, timeout=300, preexec_fn=lambda: os.umask(0o002))
    assert result.returncode == 0, result.stdout + result.stderr
    (run,) = runs_dir.iterdir()
    files = [p for p in run.rglob("*") if p.is_file()]
    assert {"run.json", "events.jsonl", "rank-0.log", "launcher.log", "rank-0.json", "profile.toml"} <= {p.name for p in files}
    wrong = {str(p.relative_to(run)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files
             if stat.S_IMODE(p.stat().st_mode) != 0o664}
    assert wrong == {}
