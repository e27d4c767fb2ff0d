"""`tuitrain serve` (issue 38): the app in a browser tab, on 127.0.0.1 with a token in its URL.

Each test starts the real command as a process, in its own process group as a terminal's foreground job is (Ctrl-C
is SIGINT to the group). The page is opened in Debian's chromium through Playwright (tests/browser.py); the requests
that must be refused are plain HTTP and websocket requests.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from browser import BrowserTab, ensure_chromium
from conftest import as_in_a_terminal, check_clean, cli, patient, wait_for
from tuitrain.cli.serving import bind_warning
from tuitrain.tui.run_table import run_label


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    out: Path
    err: Path

    def url(self) -> str:
        found = wait_for(lambda: re.search(r"http://\S+", self.out.read_text()), 60, "the URL line")
        return found.group(0)

    def base(self) -> str:
        return self.url().split("/?", 1)[0]

    def apps(self) -> list[psutil.Process]:
        """The app processes the server started (one a tab)."""
        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        return [c for c in children if _is_app(c)]

    def stop(self, sig: int = signal.SIGINT, group: bool = True) -> int:
        """Ctrl-C (SIGINT to the whole group, as a terminal sends it), or `sig` to the server alone."""
        os.killpg(self.process.pid, sig) if group else self.process.send_signal(sig)
        return self.process.wait(patient(30))

    def said(self) -> str:
        return self.out.read_text() + self.err.read_text()


def _is_app(proc: psutil.Process) -> bool:
    try:
        return "tuitrain.tui" in proc.cmdline() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(runs: Path, *args: str) -> Served:
        out, err = tmp_path / f"serve-{len(started)}.out", tmp_path / f"serve-{len(started)}.err"
        with out.open("wb") as o, err.open("wb") as e:
            process = subprocess.Popen([sys.executable, "-m", "tuitrain", "--runs-dir", str(runs), "serve", *args],
                                       stdin=subprocess.DEVNULL, stdout=o, stderr=e, start_new_session=True,
                                       preexec_fn=as_in_a_terminal, cwd=tmp_path)
        started.append(process)
        return Served(process, out, err)

    yield start
    for process in started:  # a test that failed half-way leaves nothing running
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=patient(10)) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def _open_tab(base: str, token: str | None, cookie: str | None = None,
                    then: Callable[[], None] | None = None) -> int:
    """A websocket to /ws as the page opens it (with the token or a cookie), held until the app's first bytes, then
    `then()` called; returns the handshake's status."""
    import aiohttp

    url = base.replace("http://", "ws://") + "/ws?width=80&height=24" + (f"&token={token}" if token is not None else "")
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, headers={"Cookie": cookie} if cookie else None,
                                          timeout=aiohttp.ClientWSTimeout(ws_close=patient(10))) as ws:
                await ws.receive(timeout=patient(60))  # the app's first bytes: it is up
                if then is not None:
                    then()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def test_a_request_without_the_right_token_gets_403_and_starts_no_app(serve, tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    served = serve(tmp_path / "runs", "--port", "0")
    url, base = served.url(), served.base()
    token = url.split("token=", 1)[1]
    for refused in (base + "/", base + "/?token=", base + "/?token=" + "0" * len(token), base + "/?token=" + token[:-1],
                    base + "/static/js/textual.js", base + "/ws", base + "/download/x"):
        assert _status(refused) == 403, refused
    assert asyncio.run(_open_tab(base, None)) == 403
    assert asyncio.run(_open_tab(base, "0" * len(token))) == 403
    assert asyncio.run(_open_tab(base, None, cookie=f"tuitrain-serve-{base.rsplit(':', 1)[1]}=wrong")) == 403
    assert served.apps() == []  # nothing refused reached textual-serve: no app was started
    # the right token: the page, and a cookie for this port that the page's other requests carry
    with urllib.request.urlopen(url, timeout=patient(10)) as answer:
        assert answer.status == 200
        cookie = answer.headers["Set-Cookie"].split(";", 1)[0]
    assert cookie.startswith(f"tuitrain-serve-{base.rsplit(':', 1)[1]}=")
    assert "HttpOnly" in answer.headers["Set-Cookie"] and "SameSite=Strict" in answer.headers["Set-Cookie"]
    request = urllib.request.Request(base + "/static/js/textual.js", headers={"Cookie": cookie})
    with urllib.request.urlopen(request, timeout=patient(10)) as answer:
        assert answer.status == 200
    assert served.apps() == []
    # the page's websocket carries the cookie, not the token: a tab, whose app ends when the tab closes
    apps: list[psutil.Process] = []
    assert asyncio.run(_open_tab(base, None, cookie=cookie, then=lambda: apps.extend(served.apps()))) == 101
    assert len(apps) == 1, (apps, served.said())
    wait_for(lambda: not any(_is_app(a) for a in apps), 30, "a closed tab's app to end")
    assert served.stop(signal.SIGTERM, group=False) == 0, served.said()
    assert "Traceback" not in served.said(), served.said()


def test_a_server_killed_outright_leaves_no_app_behind(serve, tmp_path: Path) -> None:
    """SIGKILL gives the server no time to end its tabs: each app ends by Linux's parent-death signal."""
    (tmp_path / "runs").mkdir()
    served = serve(tmp_path / "runs", "--port", "0")
    token = served.url().split("token=", 1)[1]
    apps: list[psutil.Process] = []

    def kill() -> None:
        apps.extend(served.apps())
        served.process.kill()

    assert asyncio.run(_open_tab(served.base(), token, then=kill)) == 101
    assert len(apps) == 1
    served.process.wait(patient(10))
    wait_for(lambda: not any(_is_app(a) for a in apps), 30, "the app to end with its server")


def test_another_address_is_said_in_one_line_and_a_busy_port_is_refused(serve, tmp_path: Path) -> None:
    assert bind_warning("127.0.0.1", 8000) is None and bind_warning("::1", 8000) is None
    assert bind_warning("localhost", 8000) is None
    (tmp_path / "runs").mkdir()
    served = serve(tmp_path / "runs", "--host", "0.0.0.0", "--port", "0")
    served.url()
    warning = served.err.read_text().splitlines()
    assert len(warning) == 1 and warning[0].startswith("tuitrain serve: warning: listening on 0.0.0.0:"), warning
    assert "token" in warning[0]
    assert served.stop() == 0
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = cli("serve", "--port", str(port), runs_dir=tmp_path / "runs", timeout=patient(30))
    text = check_clean(result, f"cannot listen on 127.0.0.1:{port}", "--port")
    assert len(text.strip().splitlines()) == 1, text
    check_clean(cli("serve", "--port", "70000", runs_dir=tmp_path / "runs", timeout=patient(30)), "not a port")


def test_a_browser_tab_shows_home_then_the_monitor_and_ctrl_c_ends_it_all(serve, finished_run: Path) -> None:
    reason = ensure_chromium()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    run_id = finished_run.name
    served = serve(finished_run.parent, "--port", "0")
    url = served.url()
    assert _status(served.base() + "/") == 403
    with sync_playwright() as playwright:
        tab = BrowserTab(playwright)
        try:
            tab.page.goto(url)
            # Home's row of the run: its label ends in the clock and name of its id ('01:58 demo'), whatever the day
            tab.wait_for_text(" ".join(run_label(run_id, time.time()).split()[-2:]), patient(60))
            tab.wait_for_text("finished", patient(10))
            (app,) = served.apps()
            shown = len(tab.frames)
            tab.page.focus(".xterm-helper-textarea")  # the page's terminal takes the keys
            tab.page.keyboard.press("Enter")  # Home: open the highlighted run
            tab.wait_for_text(f"run {run_id}", patient(30), since=shown)
        except AssertionError as exc:  # what the page first drew and what the server said: a flake under load is read
            tab.page.screenshot(path=str(served.out.with_suffix(".png")))
            raise AssertionError(f"{exc}\n--- the page's first 3000 characters:\n{tab.text()[:3000]}\n--- the server "
                                 f"and its apps said:\n{served.said()[-3000:]}") from exc
        processes = [psutil.Process(served.process.pid), *psutil.Process(served.process.pid).children(recursive=True)]
        assert served.stop() == 0  # Ctrl-C, with the tab still open
        tab.close()
    wait_for(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes), 30,
             "the server's processes to end")
    assert "Traceback" not in served.said(), served.said()
