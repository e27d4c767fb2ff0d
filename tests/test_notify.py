"""Word when a run ends ([notify] in the user's config.toml): a webhook gets the run's facts at its end, a hanging
one costs no more than its timeout, a command gets TUITRAIN_* variables; a webhook's token never lands in the run
directory; bad values are refused with file, key and fix."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from tests.conftest import FAST, cli, record, wait_for, wait_until_ended
from tuitrain.notify.config import NotifyConfig, notify_config
from tuitrain.notify.message import RunWord, command_env, end_facts, webhook_body
from tuitrain.profile.problems import ProfileError

SECRET = "T0KEN-s3cret-in-the-url"


class _Server:
    def __init__(self, hang: bool) -> None:
        self.received: list[dict[str, Any]] = []
        self.release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append({"path": self.path, "body": json.loads(body)})
                if hang:
                    outer.release.wait(120)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hooks/{SECRET}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TUITRAIN_CONFIG")  # the settings found where a user's are (conftest names an empty file)
    monkeypatch.setenv("TUITRAIN_QUEUE_DIR", str(tmp_path / "queue"))
    path = tmp_path / "config" / "tuitrain" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


@pytest.fixture
def server() -> Iterator[_Server]:
    made = _Server(hang=False)
    yield made
    made.close()


@pytest.fixture
def hanging() -> Iterator[_Server]:
    made = _Server(hang=True)
    yield made
    made.close()


def _files_hold(run_dir: Path, text: str) -> list[str]:
    return [str(p) for p in run_dir.rglob("*") if p.is_file() and text in p.read_text(errors="replace")]


@pytest.mark.slow
def test_a_command_gets_the_runs_facts_at_its_end_and_a_hanging_webhook_is_given_up_at_its_timeout(
        config: Path, hanging: _Server, runs_dir: Path, tmp_path: Path) -> None:
    """One run's end, two notifiers at once: a command gets the facts in TUITRAIN_* variables while a webhook (in
    Slack's form) takes the request and never answers; the supervisor gives it up at the timeout, in one line. The
    facts' own form as a webhook's body is checked where a run is lost (below)."""
    seen = tmp_path / "env.json"
    script = ("import json, os, sys; json.dump({k: v for k, v in os.environ.items() if k.startswith('TUITRAIN_')}, "
              "open(sys.argv[1], 'w'))")
    argv = json.dumps([sys.executable, "-c", script, str(seen)])
    config.write_text(f'[notify]\non = ["finished"]\nwebhook = "{hanging.url}"\nformat = "slack"\ncommand = {argv}\n'
                      'timeout = 2\n')
    started = cli("run", "demo", "--detach", *FAST, runs_dir=runs_dir)
    run_dir = runs_dir / started.stdout.strip()
    supervisor = record(run_dir)["pids"]["supervisor"]
    rec = wait_until_ended(run_dir)
    assert rec["status"] == "finished", rec
    wait_for(lambda: hanging.received, 60, "the webhook's POST")
    assert hanging.received[0]["body"]["text"].startswith(f"tuitrain: run {run_dir.name} (demo) on ")
    env = wait_for(lambda: seen.exists() and seen.stat().st_size and json.loads(seen.read_text()), 60, "the command")
    assert env["TUITRAIN_RUN_ID"] == run_dir.name and env["TUITRAIN_STATUS"] == "finished"
    assert env["TUITRAIN_PROFILE"] == "demo" and env["TUITRAIN_HOST"] and env["TUITRAIN_CAUSE"] == "every step done"
    assert env["TUITRAIN_RUN_DIR"] == str(run_dir)
    metrics = json.loads(env["TUITRAIN_METRICS"])
    assert metrics["step"] == 8 and "loss" in metrics, metrics
    assert float(env["TUITRAIN_DURATION"]) == pytest.approx(rec["ended"] - rec["started"], abs=0.2)
    # the supervisor gave up at the timeout (the server still holds the request) and exited
    wait_for(lambda: not psutil.pid_exists(supervisor) or psutil.Process(supervisor).status() == psutil.STATUS_ZOMBIE,
             60, "the supervisor to exit")
    log = (run_dir / "logs" / "launcher.log").read_text()
    failed = [line for line in log.splitlines() if line.startswith("[tuitrain notify")]
    assert len(failed) == 1 and "failed: timed out" in failed[0] and "/hooks/" not in failed[0], log
    assert _files_hold(run_dir, SECRET) == []


def test_bad_notify_values_name_the_file_key_and_fix() -> None:
    cases = {
        '{"on": ["done"]}': ("notify.on", "'done' is not a run ending"),
        '{"webhook": "hooks.example.com/x"}': ("notify.webhook", "http:// or https://"),
        '{"command": "notify-send done"}': ("notify.command", "argv, never a shell string"),
        '{"timeout": 0}': ("notify.timeout", "above 0"),
        '{"format": "xml"}': ("notify.format", "'xml' is not a format"),
        '{"email": "me@x"}': ("notify.email", "is not a [notify] key"),
    }
    for table, (key, words) in cases.items():
        with pytest.raises(ProfileError) as caught:
            notify_config({"notify": json.loads(table)}, "/home/u/.config/tuitrain/config.toml")
        (line,) = str(caught.value).splitlines()
        assert line.startswith(f"/home/u/.config/tuitrain/config.toml: {key}: ") and words in line, line
    assert notify_config({}, "f") == NotifyConfig(file="f")


def test_the_slack_form_is_one_text_and_a_command_gets_every_fact() -> None:
    word = RunWord("r1", "demo", "failed", "rank 0 exited with code 1: ValueError: bad\nmore", 100.0, 165.0)
    facts = end_facts(word, {"step": 4, "max_steps": 8, "loss": 0.5, "eval": {"eval_loss": 0.4, "eval_runtime": 1}},
                      "box", "/runs/r1")
    assert facts["cause"] == "rank 0 exited with code 1: ValueError: bad" and facts["duration"] == 65.0
    assert facts["metrics"] == {"step": 4, "max_steps": 8, "loss": 0.5, "eval_loss": 0.4}
    text = json.loads(webhook_body(facts, "slack"))["text"]
    assert text == ("tuitrain: run r1 (demo) on box failed after 1m05s: rank 0 exited with code 1: ValueError: bad"
                    " — step 4  loss 0.5  eval_loss 0.4")
    env = command_env(facts)
    assert env["TUITRAIN_STATUS"] == "failed" and env["TUITRAIN_DURATION"] == "65.0" and env["TUITRAIN_HOST"] == "box"


@pytest.mark.slow
def test_a_queued_run_whose_supervisor_is_killed_sends_word_that_it_is_lost(config: Path, server: _Server,
                                                                             runs_dir: Path, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A lost run's supervisor cannot say so: the first of the user's tuitrain processes that finds its queue entry
    dead (here `tuitrain queue`) records `lost` and sends word, once."""
    import os
    import signal

    table = json.loads((Path(__file__).parent / "fixtures" / "nvml" / "four_gpu_mixed.json").read_text())
    table["devices"][1]["compute_processes"] = [{"pid": 4100077, "used_memory": 1}]  # GPU 1: full and busy
    path = tmp_path / "nvml.json"
    path.write_text(json.dumps(table))
    monkeypatch.setenv("TUITRAIN_NVML_TABLE", str(path))
    config.write_text(f'[notify]\non = ["lost"]\nwebhook = "{server.url}"\ntimeout = 30\n')
    done = cli("run", "demo", "--queue", "--set", "hardware.accelerator=cuda", "--set", "hardware.gpus=[1]",
               runs_dir=runs_dir)
    assert done.returncode == 0, done.stderr
    run_dir = runs_dir / done.stdout.strip()
    supervisor = wait_for(lambda: (record(run_dir).get("pids") or {}).get("supervisor"), 60, "the waiter")
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not psutil.pid_exists(supervisor) or psutil.Process(supervisor).status() == psutil.STATUS_ZOMBIE,
             60, "the waiter to die")
    assert cli("queue", runs_dir=runs_dir).returncode == 0  # finds its entry dead
    wait_for(lambda: server.received, 60, "word of the lost run")
    body = server.received[0]["body"]
    assert body["run"] == run_dir.name and body["status"] == "lost" and "supervisor" in body["cause"]
    assert record(run_dir)["status"] == "lost"
    assert _files_hold(run_dir, SECRET) == []


@pytest.mark.slow
def test_a_running_run_whose_supervisor_is_killed_sends_word_that_it_is_lost(config: Path, server: _Server,
                                                                              runs_dir: Path) -> None:
    """Any run, not only a queued one: the first viewer that records `lost` (here `tuitrain runs`) has word sent."""
    import os
    import signal

    config.write_text(f'[notify]\non = ["lost"]\nwebhook = "{server.url}"\ntimeout = 30\n')
    done = cli("run", "demo", "--detach", "--set", "training.max_steps=100000", "--set", "training.logging_steps=1",
               "--set", "training.eval_strategy=no", "--set", "training.save_strategy=no", runs_dir=runs_dir)
    assert done.returncode == 0, done.stderr
    run_dir = runs_dir / done.stdout.strip()
    pids = wait_for(lambda: (r := record(run_dir).get("pids") or {}).get("ranks") and r, 120, "the ranks")
    os.kill(pids["supervisor"], signal.SIGKILL)
    wait_for(lambda: cli("runs", runs_dir=runs_dir).returncode == 0 and record(run_dir)["status"] == "lost", 120,
             "a viewer to record it lost (its ranks end with their supervisor)")
    wait_for(lambda: server.received, 60, "word of the lost run")
    body = server.received[0]["body"]
    assert body["run"] == run_dir.name and body["status"] == "lost" and "supervisor" in body["cause"]
    assert len(server.received) == 1


def test_the_terminal_word_is_the_bell_and_two_desktop_notifications_that_cannot_be_broken_out_of() -> None:
    from tuitrain.notify.terminal import terminal_alert

    said = terminal_alert("tuitrain: run failed", "run-1: rank 1 \x1b]0;pwned\x07 died; see logs", {})
    assert said.startswith("\x07") and "\x1b]9;tuitrain: run failed: run-1: rank 1  ]0,pwned  died" not in said
    assert said.count("\x07") == 3 and said.count("\x1b") == 2  # the bell, OSC 9 and OSC 777; nothing of the body
    assert "\x1b]777;notify;tuitrain: run failed;run-1: rank 1" in said
    wrapped = terminal_alert("t", "b", {"TMUX": "/tmp/tmux-0/default,1,0"})
    assert wrapped.startswith("\x07\x1bPtmux;\x1b\x1b]9;t: b") and wrapped.endswith("\x1b\\")


def test_terminal_must_be_true_or_false(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="notify.terminal: must be true or false"):
        notify_config({"notify": {"terminal": "yes"}}, str(tmp_path / "config.toml"))
    assert notify_config({"notify": {"terminal": True}}, "c.toml").terminal


def test_the_app_rings_the_terminal_when_a_run_ends_where_the_settings_ask(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from test_tui_app import make_app, run, until
    from tuitrain.runs.view.live import Change
    from tuitrain.tui.messages import RunsPolled

    settings = tmp_path / "config.toml"
    settings.write_text('[notify]\non = ["failed"]\nterminal = true\n')
    monkeypatch.setenv("TUITRAIN_CONFIG", str(settings))
    (tmp_path / "runs").mkdir()
    app = make_app(tmp_path)
    written: list[str] = []
    monkeypatch.setattr(app, "write_to_terminal", written.append)

    async def script(pilot):
        await until(pilot, lambda: app.terminal_word == ("failed",), what="the settings read")
        app.post_message(RunsPolled(app.rows, [Change("finished", "run-a", ""), Change("failed", "run-b", "rank 1")]))
        await until(pilot, lambda: written, what="the terminal's word")
        assert len(written) == 1 and "run-b: rank 1" in written[0] and written[0].startswith("\x07")

    run(script, app)


@pytest.mark.slow
def test_a_hung_run_sends_word_with_the_digest_and_goes_on(config: Path, server: _Server, runs_dir: Path,
                                                           tmp_path: Path) -> None:
    """on includes "hung" (the default does): word of the hang as the supervisor finds it, the stacks' digest as
    its cause; the run itself is only marked (on_hang = "notify")."""
    from test_hangs import HANG_AFTER, SLEEP_LINE, script_run

    config.write_text(f'[notify]\non = ["hung"]\nwebhook = "{server.url}"\ntimeout = 30\n')
    run_dir = script_run(tmp_path, runs_dir, ["--hang_at", "5"], f"hang_after = {HANG_AFTER}")
    try:
        wait_for(lambda: server.received, 300, "word of the hang")
        body = server.received[0]["body"]
        assert body["run"] == run_dir.name and body["status"] == "hung", body
        assert f"train.py line {SLEEP_LINE}" in body["cause"], body["cause"]
        assert record(run_dir)["status"] == "running"
    finally:
        assert cli("stop", "--now", run_dir.name, runs_dir=runs_dir).returncode == 0
    wait_until_ended(run_dir)
    assert len(server.received) == 1
