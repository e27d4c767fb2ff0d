"""A real headless browser for the tests and benchmarks of `tuitrain serve`: Debian's chromium, driven by Playwright
for Python (pointed at /usr/bin/chromium: no browser is ever downloaded).

Debian's `chromium` is installed with apt-get where missing (as root, as CI does), as tests/slurm_cluster.py installs
Slurm. The page draws the app on a canvas (xterm.js), so what it shows is read from what it draws from: the bytes of
every websocket frame the page receives, as `tuitrain serve`'s app wrote them, each handed to the page's terminal.
`BrowserTab.text()` is those bytes with the terminal's control sequences taken out, one screen update after another.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from typing import Any, Callable

CHROMIUM = "/usr/bin/chromium"
# Headless and quiet: no GPU, no sandbox (root in CI), and no call anywhere (updates, sync, first-run pages).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
_CONTROL = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_=>]|[\x00-\x08\x0b-\x1f\x7f]")


def ensure_chromium() -> str | None:
    """Install Debian's chromium where missing (apt-get update, then install); Playwright must be importable.
    Returns why a browser cannot be had, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the browser tests need Playwright for Python (pip install -e '.[test]')"
    if os.path.exists(CHROMIUM):
        return None
    if os.geteuid() != 0:
        return f"the browser tests need {CHROMIUM} (Debian's chromium), and only root can install it"
    if shutil.which("apt-get") is None:
        return f"the browser tests need {CHROMIUM} (Debian's chromium), and there is no apt-get to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=120"]
    last = None
    for argv in (["apt-get", "update", "-q", *lock],
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends", *lock, "chromium"]):
        last = subprocess.run(argv, check=False, capture_output=True, text=True, env=env, timeout=900)
    if os.path.exists(CHROMIUM):
        return None
    tail = (last.stderr or last.stdout).strip().splitlines()[-1:] if last else []
    return f"could not install chromium: {tail[0] if tail else 'apt-get failed'}"


def screen_text(data: bytes) -> str:
    """What a terminal stream writes as text: its control sequences (cursor moves, colours, modes) taken out."""
    return _CONTROL.sub(b"", data).decode("utf-8", "replace")


class BrowserTab:
    """One page of a headless chromium, and every binary websocket frame it received (with when)."""

    def __init__(self, playwright: Any, width: int = 1400, height: int = 900) -> None:
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": width, "height": height})
        self.frames: list[tuple[float, bytes]] = []
        self.page.on("websocket", lambda ws: ws.on("framereceived", self._received))

    def _received(self, payload: bytes | str) -> None:
        if isinstance(payload, bytes):
            self.frames.append((time.monotonic(), payload))

    def text(self, since: int = 0) -> str:
        return screen_text(b"".join(data for _, data in self.frames[since:]))

    def wait_for_text(self, needle: str, timeout: float, since: int = 0) -> float:
        """Wait (the browser's events flowing) until the frames from `since` on show `needle`; returns when the
        frame that completed it arrived."""
        deadline = time.monotonic() + timeout
        while True:
            seen = b""
            for at, data in self.frames[since:]:
                seen += data
                if needle in screen_text(seen):
                    return at
            if time.monotonic() > deadline:
                raise AssertionError(f"the page did not show {needle!r} within {timeout:.0f}s; it showed:\n{self.text(since)[-3000:]}")
            self.page.wait_for_timeout(100)

    def close(self) -> None:
        self.browser.close()


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
