"""A profile checked from the app without starting anything (issue 38): Home's `v` says what `tuitrain validate`
says of it, `o` there what `validate --offline` says (a profile meant for another machine), and `d`, or the launch
dialog's ctrl+l, what `tuitrain doctor` says of its machines: the same lines and verdict as the command's."""

from __future__ import annotations

import re
from pathlib import Path

import tomli_w

from conftest import cli, demo_profile_data
from test_tui_app import make_app, run, until
from tuitrain.profile.lookup import BUILTIN_DIR


def demo_with(path: Path, **tables: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(demo_profile_data(**tables)))
    return path


def nvml_aside(text: str) -> list[str]:
    return re.sub(r"\(NVML[^)]*\)", "(NVML …)", text).splitlines()


def test_v_validates_the_highlighted_profile_here_and_o_offline_as_the_cli_does(tmp_path: Path) -> None:
    """A profile for two CUDA GPUs, on a machine with none: refused here, fine alone."""
    (tmp_path / "runs").mkdir()
    profile = demo_with(tmp_path / "profiles" / "cuda.toml", hardware={"accelerator": "cuda", "gpus": [0, 1]})
    here = cli("validate", str(profile), runs_dir=tmp_path / "runs")
    offline = cli("validate", str(profile), "--offline", runs_dir=tmp_path / "runs")
    assert here.returncode == 1 and offline.returncode == 0, here.stderr + offline.stderr
    app = make_app(tmp_path)

    async def script(pilot):
        options = app.screen.query_one("#profiles")
        await until(pilot, lambda: app.screen.profiles and app.screen.profiles[0].path == profile,
                    what="the profile listed first")
        options.highlighted = 0
        await pilot.press("v")
        await until(pilot, lambda: type(app.screen).__name__ == "CheckScreen", what="the check screen")
        check = app.screen
        await until(pilot, lambda: "error(s) on this machine" in check.shown, timeout=60, what="validate's verdict")
        # the same lines; what each says of the GPUs found is the app's stand-in hardware's (no driver asked)
        assert nvml_aside(check.shown) == nvml_aside(here.stderr.strip()), check.shown
        await pilot.press("o")
        await until(pilot, lambda: "the profile alone" in check.shown, timeout=60, what="--offline's verdict")
        assert check.shown.splitlines()[-1] == offline.stdout.strip()
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "HomeScreen", what="Home again")

    run(script, app, size=(120, 40))


def test_the_launch_dialogs_ctrl_l_runs_the_doctor_alone(tmp_path: Path) -> None:
    """Two machines whose names do not resolve: each one line naming it and the fix, then the summary, as
    `tuitrain doctor` prints them; a profile with no machines is told what the doctor checks."""
    from tuitrain.tui.screens.launch import LaunchScreen

    (tmp_path / "runs").mkdir()
    two = demo_with(tmp_path / "two.toml", distributed={
        "strategy": "ddp", "num_processes": 1, "main_process_ip": "127.0.0.1", "main_process_port": 29555,
        "machines": [{"host": "nohost-a.invalid"}, {"host": "nohost-b.invalid"}]})
    doctor = cli("doctor", str(two), "--timeout", "8", runs_dir=tmp_path / "runs", timeout=60)
    assert doctor.returncode == 1 and "host name not resolved" in doctor.stdout, doctor.stdout + doctor.stderr
    app = make_app(tmp_path)

    async def script(pilot):
        app.push_screen(LaunchScreen(two))
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen", what="the launch dialog")
        await pilot.press("ctrl+l")
        await until(pilot, lambda: type(app.screen).__name__ == "CheckScreen", what="the check screen")
        check = app.screen
        await until(pilot, lambda: "machine(s) checked in" in check.shown, timeout=60, what="the doctor's summary")
        lines = check.shown.splitlines()
        expected = [line for line in doctor.stdout.splitlines() if line.strip()]
        assert lines[:-1] == expected[:-1], lines
        assert lines[-1].startswith("2 machine(s) checked in ") and lines[-1].endswith(": 2 check(s) failed")
        check.path = BUILTIN_DIR / "demo.toml"  # a profile that lists no machines
        await pilot.press("d")
        await until(pilot, lambda: "no [[distributed.machines]] to check" in check.shown, timeout=60,
                    what="what the doctor checks")

    run(script, app, size=(120, 40))
