"""Delivering word of a run's end: each notifier in its own thread, all of them within the [notify] timeout (a
retry only while time is left); a failed delivery is one line on stdout, which is the run's launcher log. A
webhook's URL holds a token, so a line names only its scheme and host."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from tuitrain.notify.config import NotifyConfig, read_notify_config
from tuitrain.notify.message import RunWord, command_env, end_facts, webhook_body

RETRY_PAUSE = 0.5


def say(line: str) -> None:
    print(f"[tuitrain notify {time.strftime('%H:%M:%S')}] {line}", flush=True)


def shown_url(url: str) -> str:
    """The part of a webhook URL that is no secret."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}{':' + str(parts.port) if parts.port else ''}/…"


def post(url: str, body: bytes, timeout: float) -> None:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": "tuitrain"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        answer.read(65536)


def run_command(argv: tuple[str, ...], env: Mapping[str, str], timeout: float) -> None:
    done = subprocess.run(list(argv), env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=timeout, check=False)
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or [""])[-1]
        raise RuntimeError(f"exit code {done.returncode}" + (f": {last[:200]}" if last else ""))


def _why(exc: BaseException) -> str:
    if isinstance(exc, subprocess.TimeoutExpired):
        return "timed out"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__


def deliver(name: str, attempt: Callable[[float], None], deadline: float) -> None:
    """`attempt(seconds)`, and once more on failure: the first try gets half the time left, so that a retry has
    the rest (all of it within `deadline`); a last failure is one line."""
    for tries in (1, 2):
        left = deadline - time.monotonic()
        if left <= 0:
            say(f"{name} failed: no time left (the [notify] timeout)")
            return
        try:
            attempt(left / 2 if tries == 1 else left)
            return
        except Exception as exc:  # noqa: BLE001 — a delivery never changes the run's end
            if tries == 2 or deadline - time.monotonic() <= RETRY_PAUSE:
                say(f"{name} failed: {_why(exc)}")
                return
            time.sleep(RETRY_PAUSE)


def send(config: NotifyConfig, facts: Mapping[str, Any]) -> None:
    """Every notifier of `config` at once; returns within its timeout (the threads are daemons)."""
    deadline = time.monotonic() + config.timeout
    jobs: list[tuple[str, Callable[[float], None]]] = []
    if config.webhook:
        url, body = config.webhook, webhook_body(facts, config.format)
        jobs.append((f"webhook {shown_url(url)}", lambda left: post(url, body, left)))
    if config.command:
        argv, env = config.command, command_env(facts)
        jobs.append((f"command {argv[0]}", lambda left: run_command(argv, env, left)))
    threads = [threading.Thread(target=deliver, args=(name, job, deadline), daemon=True) for name, job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + 0.2)
    if any(t.is_alive() for t in threads):
        say("a delivery was still going at the [notify] timeout; left behind")


def notify_end(word: RunWord, progress: Callable[[], Mapping[str, Any]], run_dir: str) -> None:
    """Word of the run's end, if the user's [notify] asks for this ending (`progress()`: the run's progress
    summary, rundir.events.progress, read only when something is sent)."""
    try:
        config = read_notify_config()
    except Exception as exc:  # noqa: BLE001 — the file changed since the start: say so, send nothing
        say(f"not sent: {str(exc).splitlines()[0]}")
        return
    if not config.any or word.status not in config.on:
        return
    facts = end_facts(word, progress(), os.uname().nodename, run_dir)
    send(config, facts)
